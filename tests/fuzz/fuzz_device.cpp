// A device profile or calibration (calibrate/profiles/*.json), with its collective section read
// as load_inputs() reads it.
#include "io/collective_constants_reader.h"
#include "io/device_profile_loader.h"

#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return megasim::fuzz::load_from_file(data, size, "device.json", [](const std::filesystem::path& f) {
    const megasim::io::LoadedDeviceProfile d = megasim::io::load_device_profile(f);
    if (!d.collective.is_null())
      megasim::io::read_collective_constants(
          megasim::io::JsonReader(d.collective, "collective", f.string()));
  });
}
