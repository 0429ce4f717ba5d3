// Whether this test build runs under AddressSanitizer (GCC's -fsanitize=address or clang's).
// Cases the sanitizer runtimes cannot survive (exhausting file descriptors) skip themselves
// there; they are labelled `timing`, so the release lane runs them (docs/ci.md).
#pragma once

namespace llmcap::test_support {

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kUnderSanitizers = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kUnderSanitizers = true;
#else
inline constexpr bool kUnderSanitizers = false;
#endif
#else
inline constexpr bool kUnderSanitizers = false;
#endif

}  // namespace llmcap::test_support
