#include "server/settings.h"

#include "server/text_file.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

extern char** environ;

namespace llmcap::server {

using nlohmann::json;

namespace {

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) {
    if (!out.empty()) out += ",";
    out += s;
  }
  return out;
}

std::vector<std::string> split_list(std::string_view text) {
  std::vector<std::string> out;
  while (!text.empty()) {
    const auto comma = text.find(',');
    std::string_view item = text.substr(0, comma);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (!item.empty()) out.emplace_back(item);
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return out;
}

template <typename Int>
std::string parse_int(std::string_view text, Int* out, std::int64_t lo, std::int64_t hi) {
  std::int64_t v = 0;
  const auto* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (ec != std::errc() || ptr != end)
    return "expected an integer, got '" + std::string(text) + "'";
  if (v < lo || v > hi) {
    return "value " + std::to_string(v) + " out of range [" + std::to_string(lo) + ", " +
           std::to_string(hi) + "]";
  }
  *out = static_cast<Int>(v);
  return "";
}

}  // namespace

Settings::Settings(std::string env_prefix) : env_prefix_(std::move(env_prefix)) {}

std::string Settings::flag_name(std::string_view key) {
  std::string s(key);
  for (char& c : s) {
    if (c == '_') c = '-';
  }
  return s;
}

std::string Settings::env_name(std::string_view prefix, std::string_view key) {
  std::string s(prefix);
  for (char c : key) s.push_back(c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c);
  return s;
}

void Settings::add(std::string key, std::string help, std::string* field) {
  Field f{std::move(help), "string", *field, nullptr, nullptr};
  f.set_text = [field](std::string_view v) {
    *field = std::string(v);
    return std::string();
  };
  f.set_json = [field](const void* p) {
    const auto& j = *static_cast<const json*>(p);
    if (!j.is_string()) return std::string("expected a string");
    *field = j.get<std::string>();
    return std::string();
  };
  order_.push_back(key);
  fields_.emplace(std::move(key), std::move(f));
}

void Settings::add(std::string key, std::string help, bool* field) {
  Field f{std::move(help), "bool", *field ? "true" : "false", nullptr, nullptr};
  f.set_text = [field](std::string_view v) {
    if (v == "true" || v == "1" || v == "yes" || v == "on") {
      *field = true;
    } else if (v == "false" || v == "0" || v == "no" || v == "off") {
      *field = false;
    } else {
      return "expected true or false, got '" + std::string(v) + "'";
    }
    return std::string();
  };
  f.set_json = [field](const void* p) {
    const auto& j = *static_cast<const json*>(p);
    if (!j.is_boolean()) return std::string("expected true or false");
    *field = j.get<bool>();
    return std::string();
  };
  order_.push_back(key);
  fields_.emplace(std::move(key), std::move(f));
}

void Settings::add(std::string key, std::string help, int* field) {
  Field f{std::move(help), "int", std::to_string(*field), nullptr, nullptr};
  f.set_text = [field](std::string_view v) {
    return parse_int(v, field, std::numeric_limits<int>::min(), std::numeric_limits<int>::max());
  };
  f.set_json = [field](const void* p) {
    const auto& j = *static_cast<const json*>(p);
    if (!j.is_number_integer()) return std::string("expected an integer");
    return parse_int(std::to_string(j.get<std::int64_t>()), field, std::numeric_limits<int>::min(),
                     std::numeric_limits<int>::max());
  };
  order_.push_back(key);
  fields_.emplace(std::move(key), std::move(f));
}

void Settings::add(std::string key, std::string help, std::int64_t* field) {
  Field f{std::move(help), "int", std::to_string(*field), nullptr, nullptr};
  f.set_text = [field](std::string_view v) {
    return parse_int(v, field, std::numeric_limits<std::int64_t>::min(),
                     std::numeric_limits<std::int64_t>::max());
  };
  f.set_json = [field](const void* p) {
    const auto& j = *static_cast<const json*>(p);
    if (!j.is_number_integer()) return std::string("expected an integer");
    *field = j.get<std::int64_t>();
    return std::string();
  };
  order_.push_back(key);
  fields_.emplace(std::move(key), std::move(f));
}

void Settings::add(std::string key, std::string help, std::uint16_t* field) {
  Field f{std::move(help), "port", std::to_string(*field), nullptr, nullptr};
  f.set_text = [field](std::string_view v) { return parse_int(v, field, 0, 65535); };
  f.set_json = [field](const void* p) {
    const auto& j = *static_cast<const json*>(p);
    if (!j.is_number_integer()) return std::string("expected an integer port");
    return parse_int(std::to_string(j.get<std::int64_t>()), field, 0, 65535);
  };
  order_.push_back(key);
  fields_.emplace(std::move(key), std::move(f));
}

void Settings::add(std::string key, std::string help, double* field) {
  std::ostringstream def;
  def << *field;
  Field f{std::move(help), "number", def.str(), nullptr, nullptr};
  f.set_text = [field](std::string_view v) {
    char* end = nullptr;
    const std::string s(v);
    const double d = std::strtod(s.c_str(), &end);
    if (s.empty() || end != s.c_str() + s.size() || !std::isfinite(d)) {
      return "expected a number, got '" + s + "'";
    }
    *field = d;
    return std::string();
  };
  f.set_json = [field](const void* p) {
    const auto& j = *static_cast<const json*>(p);
    if (!j.is_number()) return std::string("expected a number");
    *field = j.get<double>();
    return std::string();
  };
  order_.push_back(key);
  fields_.emplace(std::move(key), std::move(f));
}

void Settings::add(std::string key, std::string help, std::vector<std::string>* field) {
  Field f{std::move(help), "list", join(*field), nullptr, nullptr};
  f.set_text = [field](std::string_view v) {
    *field = split_list(v);
    return std::string();
  };
  f.set_json = [field](const void* p) {
    const auto& j = *static_cast<const json*>(p);
    if (!j.is_array()) return std::string("expected an array of strings");
    std::vector<std::string> out;
    for (const auto& item : j) {
      if (!item.is_string()) return std::string("expected an array of strings");
      out.push_back(item.get<std::string>());
    }
    *field = std::move(out);
    return std::string();
  };
  order_.push_back(key);
  fields_.emplace(std::move(key), std::move(f));
}

void Settings::add_repeated(std::string key, std::string help, std::vector<std::string>* field) {
  Field f{std::move(help), "repeated", "", nullptr, nullptr};
  f.set_text = [field](std::string_view v) {
    field->emplace_back(v);
    return std::string();
  };
  f.set_json = [field](const void* p) {
    const auto& j = *static_cast<const json*>(p);
    if (!j.is_array()) return std::string("expected an array of strings");
    for (const auto& item : j) {
      if (!item.is_string()) return std::string("expected an array of strings");
      field->push_back(item.get<std::string>());
    }
    return std::string();
  };
  order_.push_back(key);
  fields_.emplace(std::move(key), std::move(f));
}

std::string closest_name(std::string_view name, const std::vector<std::string>& candidates) {
  // Optimal string alignment distance.
  auto distance = [](std::string_view a, std::string_view b) {
    std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
    for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
    for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
      for (std::size_t j = 1; j <= b.size(); ++j) {
        const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
        d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
        if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
          d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
    return d[a.size()][b.size()];
  };
  const std::size_t allowed = name.size() <= 4 ? 1 : name.size() <= 8 ? 2 : 3;
  std::string best;
  std::size_t best_distance = allowed + 1;
  for (const auto& c : candidates) {
    const std::size_t dist = distance(name, c);
    if (dist < best_distance) {
      best = c;
      best_distance = dist;
    }
  }
  return best;
}

std::string did_you_mean(std::string_view name, const std::vector<std::string>& candidates) {
  const std::string best = closest_name(name, candidates);
  return best.empty() ? "" : " (did you mean '" + best + "'?)";
}

std::string Settings::nearest_key(std::string_view key) const { return closest_name(key, order_); }

bool Settings::has(std::string_view key) const { return fields_.find(key) != fields_.end(); }

bool Settings::is_bool(std::string_view key) const {
  auto it = fields_.find(key);
  return it != fields_.end() && it->second.type == "bool";
}

std::string Settings::set(std::string_view key, std::string_view value, std::string_view source) {
  auto it = fields_.find(key);
  if (it == fields_.end())
    return std::string(source) + ": unknown key '" + std::string(key) + "'" +
           did_you_mean(key, order_);
  std::string err = it->second.set_text(value);
  if (!err.empty()) return std::string(source) + ": " + std::string(key) + ": " + err;
  return "";
}

std::string Settings::apply_json_text(std::string_view json_text, std::string_view source) {
  json doc;
  try {
    doc = json::parse(json_text);
  } catch (const json::parse_error& e) {
    return std::string(source) + ": invalid JSON: " + e.what();
  }
  if (!doc.is_object()) return std::string(source) + ": expected a JSON object of settings";
  for (const auto& [key, value] : doc.items()) {
    auto it = fields_.find(key);
    if (it == fields_.end())
      return std::string(source) + ": unknown key '" + key + "'" + did_you_mean(key, order_);
    std::string err = it->second.set_json(&value);
    if (!err.empty()) return std::string(source) + ": " + key + ": " + err;
  }
  return "";
}

std::string Settings::apply_file(const std::string& path) {
  const auto text = read_text_file(path);
  if (!text) return "cannot read config file '" + path + "'";
  return apply_json_text(*text, path);
}

std::string Settings::apply_environment(const std::vector<std::string>& ignored) {
  if (env_prefix_.empty() || environ == nullptr) return "";
  for (char** e = environ; *e != nullptr; ++e) {
    std::string_view entry(*e);
    if (entry.substr(0, env_prefix_.size()) != env_prefix_) continue;
    const auto eq = entry.find('=');
    if (eq == std::string_view::npos) continue;
    const std::string name(entry.substr(0, eq));
    bool skip = false;
    for (const auto& ig : ignored) skip = skip || ig == name;
    if (skip) continue;
    std::string key;
    for (char c : std::string_view(name).substr(env_prefix_.size())) {
      key.push_back(c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c);
    }
    if (!has(key)) {
      const std::string near = nearest_key(key);
      return "environment: unknown variable " + name +
             (near.empty() ? "" : " (did you mean " + env_name(env_prefix_, near) + "?)");
    }
    std::string err = set(key, entry.substr(eq + 1), "environment " + name);
    if (!err.empty()) return err;
  }
  return "";
}

std::string Settings::help_text() const {
  std::string out;
  for (const auto& key : order_) {
    const auto& f = fields_.at(key);
    // Built with append(): GCC 12 reports a false -Wrestrict on "literal" + string here.
    std::string flag("  --");
    flag.append(flag_name(key));
    if (f.type != "bool") flag.append(f.type == "list" ? " A,B" : " VALUE");
    if (flag.size() < 34)
      flag.resize(34, ' ');
    else
      flag += "  ";
    out += flag + f.help;
    if (f.type == "repeated") out += " (repeatable)";
    if (!f.default_text.empty()) out += " (default: " + f.default_text + ")";
    out += "\n";
  }
  return out;
}

std::string parse_flags(Settings& settings, const std::vector<std::string>& args,
                        std::vector<std::string>& positional) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.size() < 3 || a.rfind("--", 0) != 0) {
      if (a.size() > 1 && a[0] == '-' && a != "-") return "unknown flag '" + a + "'";
      positional.push_back(a);
      continue;
    }
    std::string name = a.substr(2);
    std::string value;
    bool has_value = false;
    if (const auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_value = true;
    }
    std::string key = name;
    for (char& c : key) {
      if (c == '-') c = '_';
    }
    if (!settings.has(key)) {
      const std::string near = settings.nearest_key(key);
      return "unknown flag '--" + name + "'" +
             (near.empty() ? "" : " (did you mean '--" + Settings::flag_name(near) + "'?)");
    }
    if (!has_value) {
      if (settings.is_bool(key)) {
        value = "true";
      } else if (i + 1 < args.size()) {
        value = args[++i];
      } else {
        return "flag '--" + name + "' needs a value";
      }
    }
    std::string err = settings.set(key, value, "flag --" + name);
    if (!err.empty()) return err;
  }
  return "";
}

}  // namespace llmcap::server
