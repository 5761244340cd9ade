#include <ebla/core/storage.hpp>

#include <ebla/core/error.hpp>

#include <algorithm>
#include <cctype>

namespace ebla {

const char* to_string(Storage s) {
  switch (s) {
    case Storage::binary64: return "binary64";
    case Storage::binary32: return "binary32";
    case Storage::bfloat16: return "bfloat16";
    case Storage::binary16: return "binary16";
    case Storage::block16: return "block16";
    case Storage::block8: return "block8";
  }
  return "?";
}

const std::vector<Storage>& storage_formats() {
  static const std::vector<Storage> all{Storage::binary64, Storage::binary32, Storage::bfloat16,
                                        Storage::binary16, Storage::block16,  Storage::block8};
  return all;
}

Storage storage_by_name(const std::string& name, const char* function) {
  std::string key = name;
  std::transform(key.begin(), key.end(), key.begin(), [](unsigned char c) { return std::tolower(c); });
  struct Alias {
    const char* name;
    Storage storage;
  };
  static const Alias aliases[] = {{"double", Storage::binary64}, {"fp64", Storage::binary64},
                                  {"single", Storage::binary32}, {"float", Storage::binary32},
                                  {"fp32", Storage::binary32},   {"bf16", Storage::bfloat16},
                                  {"half", Storage::binary16},   {"fp16", Storage::binary16}};
  for (Storage s : storage_formats())
    if (key == to_string(s)) return s;
  for (const Alias& a : aliases)
    if (key == a.name) return a.storage;
  std::string known;
  for (Storage s : storage_formats()) known += std::string(known.empty() ? "" : ", ") + to_string(s);
  throw_invalid(function, "unknown storage format '" + name + "' (known: " + known + ")");
}

}  // namespace ebla
