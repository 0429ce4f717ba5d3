#pragma once

// The completion token our coroutines await Asio operations with: `co_await op(...,
// use_nothrow)` gives (error_code, results...) instead of throwing. One definition for net/ and
// agent/ (a unity build compiles several of their sources as one translation unit).

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace llmcap::net {

inline constexpr auto use_nothrow = boost::asio::as_tuple(boost::asio::use_awaitable);

}  // namespace llmcap::net
