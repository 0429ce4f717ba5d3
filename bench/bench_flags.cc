#include "bench/bench_flags.h"

#include <cstdlib>
#include <exception>
#include <iostream>
#include <stdexcept>

namespace llmcap::bench {

BenchFlags::BenchFlags(int argc, char** argv) : program_(argc > 0 ? argv[0] : "bench") {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--", 0) != 0 || a.find('=') == std::string::npos) {
      std::cerr << program_ << ": argument '" << a << "' is not --name=value\n";
      std::exit(2);
    }
    const auto eq = a.find('=');
    given_[a.substr(2, eq - 2)] = a.substr(eq + 1);
  }
}

double BenchFlags::number(const std::string& name, double fallback) {
  known_.push_back(name);
  const auto it = given_.find(name);
  if (it == given_.end()) return fallback;
  used_[name] = true;
  try {
    std::size_t n = 0;
    const double v = std::stod(it->second, &n);
    if (n != it->second.size()) throw std::invalid_argument("trailing");
    return v;
  } catch (const std::exception&) {
    std::cerr << program_ << ": --" << name << ": '" << it->second << "' is not a number\n";
    std::exit(2);
  }
}

std::string BenchFlags::text(const std::string& name, const std::string& fallback) {
  known_.push_back(name);
  const auto it = given_.find(name);
  if (it == given_.end()) return fallback;
  used_[name] = true;
  return it->second;
}

void BenchFlags::check_all_used() const {
  for (const auto& [name, value] : given_) {
    if (used_.count(name) != 0) continue;
    std::cerr << program_ << ": unknown flag --" << name << "; known:";
    for (const auto& k : known_) std::cerr << " --" << k;
    std::cerr << "\n";
    std::exit(2);
  }
}

}  // namespace llmcap::bench
