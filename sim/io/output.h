// Writing result files so that a failed or interrupted run leaves nothing behind: the content
// goes to a temporary file beside the target, which is renamed over the target only once it is
// complete. Errors (unwritable folder, full disk) are InputErrors naming the path.
#pragma once

#include <filesystem>
#include <string>

namespace megasim::io {

void write_file_atomically(const std::filesystem::path& target, const std::string& content);

}  // namespace megasim::io
