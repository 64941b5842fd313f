#include "io/output.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <system_error>
#include <utility>

#include "engine/error.h"

namespace megasim::io {
namespace fs = std::filesystem;
namespace {

// The absolute path of `p` with links resolved as far as it exists, for comparing targets.
// Made absolute first: weakly_canonical leaves a relative path none of whose parts exist as
// it is, so "x.json" and "./x.json", one new file, compared unequal until 2026-12-05 (both
// outputs ran into one temporary and the second rename failed after the work, leaving the
// wrong file).
// A link whose target does not exist yet is followed too (weakly_canonical stops at it): two
// outputs, one named through such a link, were one file written twice until 2026-12-06, and a
// lone output replaced the link with a file of its own.
fs::path identity(const fs::path& p) {
  std::error_code ec;
  fs::path whole = fs::absolute(p, ec);
  if (ec) return p.lexically_normal();
  for (int hops = 0; hops < 40 && fs::is_symlink(fs::symlink_status(whole, ec)); ++hops) {
    const fs::path to = fs::read_symlink(whole, ec);
    if (ec) break;
    whole = to.is_absolute() ? to : whole.parent_path() / to;
  }
  fs::path id = fs::weakly_canonical(whole, ec);
  return ec ? whole.lexically_normal() : id.lexically_normal();
}

// Whether the kernel says `path` has the statx attribute `a`: of a link itself, or with
// `follow` of what it leads to (an output's folder, reached through a link: a review).
bool has_attribute(const fs::path& path, std::uint64_t a, bool follow = false) {
  struct statx x {};
  return ::statx(AT_FDCWD, path.c_str(), follow ? 0 : AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS, &x) ==
             0 &&
         (x.stx_attributes_mask & a) != 0 && (x.stx_attributes & a) != 0;
}

// Refuses an existing `path` that a rename into its folder cannot replace: an immutable or
// append-only file, a mount point (a bind-mounted file: EBUSY) or, in a sticky folder, another
// user's file in another user's folder (EPERM). Found after the work, at the rename, once earlier
// outputs were already replaced (until 2026-12-06).
void check_replaceable(const std::string& name, const std::string& option, const fs::path& path) {
  struct stat file {};
  if (::lstat(path.c_str(), &file) != 0 || !S_ISREG(file.st_mode)) return;
  const fs::path folder = path.has_parent_path() ? path.parent_path() : fs::path(".");
  struct stat dir {};
  if (::stat(folder.c_str(), &dir) != 0) return;
  // The kernel's word that the file is a mount's root (Linux 5.8 on; unsaid before, then not
  // refused here): a device number would differ on an overlay's lower layer too, and match a
  // bind mount from the same file system (a review, 2026-12-06).
  if (has_attribute(path, STATX_ATTR_MOUNT_ROOT)) {
    throw InputError(name + ": is a mount point (a file mounted over); " + option +
                     " replaces a file by renaming a new one over it, which a mount point "
                     "refuses");
  }
  // An immutable or append-only file (chattr +i, +a): no rename replaces it, root's neither
  // (found at the rename, after the work, until 2026-12-06).
  for (const auto& [a, what] :
       {std::pair<std::uint64_t, const char*>{STATX_ATTR_IMMUTABLE, "immutable"},
        {STATX_ATTR_APPEND, "append-only"}}) {
    if (has_attribute(path, a)) {
      throw InputError(name + ": is " + what + " (chattr); " + option +
                       " replaces a file by renaming a new one over it, which that refuses; "
                       "give another name");
    }
  }
  const uid_t me = ::geteuid();
  if ((dir.st_mode & S_ISVTX) != 0 && me != 0 && me != file.st_uid && me != dir.st_uid) {
    throw InputError(name +
                     ": belongs to another user in a folder only its owners may rename "
                     "in (the sticky bit); " +
                     option + " replaces a file by renaming a new one over it; give another name");
  }
}

// The temporary files being written or awaiting their rename, which an interrupt (SIGINT,
// SIGTERM, SIGHUP), a file past the size limit (SIGXFSZ, ulimit -f) or a reader of stdout that
// has gone (SIGPIPE: `megasim ... -o f | head`; until 2026-12-05 it left f.tmp.PID) removes
// before the process ends as the signal would end it: no partial file is left behind. Fixed
// storage, so the handler only reads it and calls unlink.
constexpr int kMaxPending = 16;
constexpr std::size_t kMaxPendingPath = 4096;
char g_pending[kMaxPending][kMaxPendingPath];
volatile std::sig_atomic_t g_pending_used[kMaxPending];
// A descriptor open on the file, for one removed only while it is empty (search's results
// file, created before its first line); -1 for a temporary file, always removed.
volatile std::sig_atomic_t g_pending_fd[kMaxPending];

extern "C" void remove_pending_and_reraise(int sig) {
  for (int i = 0; i < kMaxPending; ++i) {
    if (g_pending_used[i] == 0) continue;
    struct stat st {};
    const int fd = g_pending_fd[i];
    if (fd < 0 || (::fstat(fd, &st) == 0 && st.st_size == 0)) ::unlink(g_pending[i]);
  }
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

// Tracks `tmp` for removal on an interrupt (only while empty where `fd` is open on it); the
// slot, or -1 when none is free or the path is too long to keep (then an interrupt may leave
// that one file).
int track_pending(const fs::path& tmp, int fd = -1) {
  // A signal the caller ignores (nohup's SIGHUP, a script's trap '' INT) stays ignored.
  static const bool installed = [] {
    for (const int sig : {SIGINT, SIGTERM, SIGHUP, SIGXFSZ, SIGPIPE}) {
      struct sigaction old {};
      if (::sigaction(sig, nullptr, &old) != 0 || old.sa_handler == SIG_IGN) continue;
      struct sigaction now {};
      now.sa_handler = remove_pending_and_reraise;
      sigemptyset(&now.sa_mask);
      ::sigaction(sig, &now, nullptr);
    }
    return true;
  }();
  (void)installed;
  const std::string s = tmp.string();
  if (s.size() >= kMaxPendingPath) return -1;
  for (int i = 0; i < kMaxPending; ++i) {
    if (g_pending_used[i] != 0) continue;
    std::memcpy(g_pending[i], s.c_str(), s.size() + 1);
    g_pending_fd[i] = fd;
    std::atomic_signal_fence(std::memory_order_seq_cst);  // the path before its flag
    g_pending_used[i] = 1;
    return i;
  }
  return -1;
}

void untrack_pending(const fs::path& tmp) {
  const std::string s = tmp.string();
  for (int i = 0; i < kMaxPending; ++i) {
    if (g_pending_used[i] != 0 && s == g_pending[i]) g_pending_used[i] = 0;
  }
}

// The longest file name the folder of `path` holds (255 where the file system does not say).
std::size_t name_max(const fs::path& path) {
  const fs::path folder = path.has_parent_path() ? path.parent_path() : fs::path(".");
  const long most = ::pathconf(folder.c_str(), _PC_NAME_MAX);
  return most > 0 ? static_cast<std::size_t>(most) : 255;
}

// Writes `content` to a new temporary file beside `path`, the command's `index`-th output;
// returns its name.
fs::path write_temporary(const std::string& name, const fs::path& path, const std::string& content,
                         std::size_t index) {
  // Beside the file, named after it where the name allows; a name near the file system's limit
  // (255 bytes) takes a short one instead (a 250-byte name was refused until 2026-12-06).
  const std::string suffix = ".tmp." + std::to_string(::getpid()) + "." + std::to_string(index);
  fs::path tmp = path;
  if (path.filename().string().size() + suffix.size() > name_max(path)) {
    tmp = path.parent_path() / (".megasim" + suffix);
  } else {
    tmp += suffix;
  }
  (void)track_pending(tmp);
  std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
  if (!out) {
    const std::string why = std::strerror(errno);
    untrack_pending(tmp);
    throw InputError(name + ": cannot write here (" + why + ")");
  }
  out << content;
  out.flush();
  if (!out) {
    const std::string why = std::strerror(errno);
    out.close();
    std::error_code ec;
    fs::remove(tmp, ec);
    untrack_pending(tmp);
    throw InputError(name + ": write failed (" + why + ")");
  }
  return tmp;
}

}  // namespace

// Whether `p` is one of this process's standard streams' files, or reaches its file through
// one of its open descriptors (/dev/stdout, /dev/fd/N, /proc/self/fd/N, /proc/PID/fd/N): the
// file the shell opened for `>> log`, which the rename would replace with a new file (a log's
// earlier lines lost, exit 0), or a pipe the rename cannot reach (refused after the work),
// until 2026-12-06.
bool through_descriptor(const fs::path& p) {
  // The file itself: one of the standard streams' (reached through a link to /dev/fd, a task's
  // fd folder or a hard link, which no path text shows: a review, 2026-12-06).
  struct stat target {};
  // A file or pipe only: a device (/dev/null as stdin under cron) is refused as one, below.
  if (::stat(p.c_str(), &target) == 0 && (S_ISREG(target.st_mode) || S_ISFIFO(target.st_mode))) {
    for (const int fd : {0, 1, 2}) {
      struct stat open {};
      if (::fstat(fd, &open) == 0 && open.st_dev == target.st_dev && open.st_ino == target.st_ino)
        return true;
    }
  }
  std::error_code ec;
  fs::path whole = fs::absolute(p, ec);
  if (ec) return false;
  const auto descriptor = [](const fs::path& at) {
    const std::string s = at.lexically_normal().string();
    if (s.rfind("/dev/fd/", 0) == 0) return true;
    if (s.rfind("/proc/", 0) != 0) return false;
    const auto fd = s.find("/fd/");
    return fd != std::string::npos && s.find('/', 6) == fd;  // /proc/<self|pid>/fd/N
  };
  for (int hops = 0; hops < 40; ++hops) {
    if (descriptor(whole)) return true;
    if (!fs::is_symlink(fs::symlink_status(whole, ec))) return false;
    const fs::path to = fs::read_symlink(whole, ec);
    if (ec) return false;
    whole = to.is_absolute() ? to : whole.parent_path() / to;
  }
  return false;
}

OutputFiles::OutputFiles(std::vector<fs::path> inputs, const FilesRead* read)
    : inputs_(std::move(inputs)), read_(read) {}

void OutputFiles::check_not_input(const Target& t) const {
  if (t.name == "-") return;
  std::error_code ec;
  if (!fs::exists(t.path, ec)) return;
  const auto refuse = [&t](const fs::path& in) {
    throw InputError(t.name + ": is an input of this command (" + in.string() + "); " + t.option +
                     " would overwrite it");
  };
  for (const auto& in : inputs_) {
    if (fs::equivalent(t.path, in, ec)) refuse(in);
  }
  if (read_ == nullptr) return;
  for (const auto& in : read_->files()) {
    if (fs::equivalent(t.path, in, ec)) refuse(in);
  }
}

void OutputFiles::add(const std::string& option, const std::string& target) {
  if (target.empty()) {
    throw InputError(option + ": empty file name; give a path, or - for standard output");
  }
  Target t{option, target, fs::path(target), std::nullopt};
  if (target != "-") {
    if (through_descriptor(t.path)) {
      throw InputError(target +
                       ": names a file this process has open (its standard input, output or "
                       "error, or one of its descriptors under /dev or /proc); give another "
                       "file's path, or - for standard output");
    }
    std::error_code ec;
    const auto link = fs::symlink_status(t.path, ec);
    if (fs::is_symlink(link)) {
      t.path = identity(t.path);
      // Links that lead back to themselves name no file (one was replaced by a file of its own).
      if (fs::is_symlink(fs::symlink_status(t.path, ec))) {
        throw InputError(target + ": a loop of symbolic links; " + option +
                         " expects a file path to write");
      }
    }
    const auto status = fs::status(t.path, ec);
    if (fs::is_directory(status)) {
      throw InputError(target + ": is a directory; " + option + " expects a file path to write");
    }
    if (fs::exists(status) && !fs::is_regular_file(status)) {
      throw InputError(target + ": is a device or other special file; " + option +
                       " replaces only regular files");
    }
    // The folder is checked now, before the work, not when the finished file is written.
    const fs::path folder = t.path.has_parent_path() ? t.path.parent_path() : fs::path(".");
    const auto folder_status = fs::status(folder, ec);
    if (ec && ec != std::errc::no_such_file_or_directory) {
      throw InputError(target + ": folder " + folder.string() + " cannot be read (" + ec.message() +
                       ")");
    }
    if (!fs::exists(folder_status)) {
      throw InputError(target + ": folder " + folder.string() + " does not exist; " + option +
                       " writes into an existing folder");
    }
    if (!fs::is_directory(folder_status)) {
      throw InputError(target + ": " + folder.string() + " is not a folder; " + option +
                       " expects a file path to write");
    }
    // Write and search: a folder without search permission cannot hold a new file either.
    if (::access(folder.c_str(), W_OK | X_OK) != 0) {
      throw InputError(target + ": folder " + folder.string() + " is not writable (" +
                       std::strerror(errno) + ")");
    }
    // An append-only folder (chattr +a) takes the temporary file but not its rename: found
    // after the work, the temporary left undeletable (a review, 2026-12-06).
    if (has_attribute(folder, STATX_ATTR_APPEND, true)) {
      throw InputError(target + ": folder " + folder.string() + " is append-only (chattr +a); " +
                       option + " renames a finished file into it, which that refuses");
    }
    // A name the folder's file system cannot hold failed only at the rename into place, after
    // the work, the report printed and other outputs renamed (until 2026-12-06).
    const std::size_t name_bytes = t.path.filename().string().size(), most = name_max(t.path);
    if (name_bytes > most) {
      throw InputError(target + ": the file name is " + std::to_string(name_bytes) +
                       " bytes, over the " + std::to_string(most) +
                       " its folder's file system holds; " + option + " needs a shorter name");
    }
    check_replaceable(target, option, t.path);
    check_not_input(t);
  }
  for (const auto& other : targets_) {
    if ((target == "-" && other.name == "-") ||
        (target != "-" && other.name != "-" && identity(t.path) == identity(other.path))) {
      throw InputError(target + ": named by both " + other.option + " and " + option +
                       "; give each output its own file");
    }
  }
  targets_.push_back(std::move(t));
}

void OutputFiles::set(const std::string& option, std::string content) {
  for (auto& t : targets_) {
    if (t.option == option) t.content = std::move(content);
  }
}

bool OutputFiles::to_stdout() const {
  for (const auto& t : targets_) {
    if (t.name == "-") return true;
  }
  return false;
}

void OutputFiles::refuse_beside_stdout(const std::string& option) const {
  for (const auto& t : targets_) {
    if (t.name != "-") continue;
    throw InputError(option + " prints its report on standard output, which " + t.option +
                     " - takes; write " + t.option + " to a file, or drop " + option);
  }
}

void OutputFiles::commit(const std::optional<std::string>& report) {
  for (const auto& t : targets_) {
    check_not_input(t);
    if (t.name != "-") check_replaceable(t.name, t.option, t.path);
  }
  std::vector<std::pair<fs::path, const Target*>> written;
  const auto discard = [&written] {
    std::error_code ec;
    for (const auto& [tmp, unused] : written) {
      fs::remove(tmp, ec);
      untrack_pending(tmp);
    }
  };
  try {
    for (std::size_t i = 0; i < targets_.size(); ++i) {
      const Target& t = targets_[i];
      if (t.content && t.name != "-") {
        written.emplace_back(write_temporary(t.name, t.path, *t.content, i), &t);
      }
    }
    // Standard output between the temporaries and their renames: a closed pipe or full disk
    // there leaves no file behind, and an existing one as it was.
    if (to_stdout()) {
      for (const auto& t : targets_) {
        if (t.content && t.name == "-") write_stdout(*t.content);
      }
    } else if (report) {
      write_stdout(*report);
    }
  } catch (...) {
    discard();
    throw;
  }
  for (std::size_t i = 0; i < written.size(); ++i) {
    std::error_code ec;
    // A file replaced keeps its permissions (a private 600 file came back 644 until
    // 2026-12-06).
    const auto existing = fs::status(written[i].second->path, ec);
    if (!ec && fs::is_regular_file(existing)) {
      fs::permissions(written[i].first, existing.permissions(), ec);
    }
    ec.clear();
    fs::rename(written[i].first, written[i].second->path, ec);
    if (!ec) untrack_pending(written[i].first);
    if (ec) {
      written.erase(written.begin(), written.begin() + static_cast<std::ptrdiff_t>(i));
      discard();
      throw InputError(written.front().second->name +
                       ": cannot rename the finished file into place (" + ec.message() + ")");
    }
  }
}

void write_file_atomically(const fs::path& target, const std::string& content) {
  OutputFiles out;
  out.add("-o", target.string());
  out.set("-o", content);
  out.commit();
}

void write_stdout(const std::string& report) {
  // A name a file gave (a scenario's, a model's) reached the terminal with its ESC and CR raw
  // until 2026-12-07: a text report could recolour the terminal or overwrite its own lines.
  // JSON, HTML and traces hold no raw control byte but newline and tab, so they pass unchanged.
  const std::string text = printable(report);
  const std::size_t n = std::fwrite(text.data(), 1, text.size(), stdout);
  if (n != text.size() || std::fflush(stdout) != 0 || std::ferror(stdout)) {
    throw InputError(std::string("standard output: write failed (") + std::strerror(errno) + ")");
  }
}

void remove_if_empty_on_interrupt(const fs::path& file, int fd) {
  (void)track_pending(file, fd);
}

void keep_on_interrupt(const fs::path& file) {
  untrack_pending(file);
}

}  // namespace megasim::io
