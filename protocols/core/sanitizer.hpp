#pragma once
// Whether this build runs under AddressSanitizer (GCC and Clang say so
// differently): its shadow memory and quarantine change what an address
// space limit or a resident set size means.
namespace rdmaconf {

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kAddressSanitizer = true;
#else
inline constexpr bool kAddressSanitizer = false;
#endif
#else
inline constexpr bool kAddressSanitizer = false;
#endif

}  // namespace rdmaconf
