#include "reconciler/server/request_head.h"

#include <catch2/catch.hpp>
#include <string>

using rg::server::FindRequestHeadEnd;
using rg::server::ParseRequestHead;

TEST_CASE("the head ends at the first empty line") {
  CHECK_FALSE(FindRequestHeadEnd("GET / HTTP/1.1\r\nHost: x\r\n"));
  CHECK_FALSE(FindRequestHeadEnd(""));
  const std::string head = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  CHECK(FindRequestHeadEnd(head) == head.size());
  CHECK(FindRequestHeadEnd(head + "body\r\n\r\n") == head.size());
}

TEST_CASE("a head gives its method, path and body framing") {
  auto h = ParseRequestHead("POST /webhook?x=1 HTTP/1.1\r\ncontent-length:  42 \r\n\r\n");
  REQUIRE(h.ok());
  CHECK(h->method == "POST");
  CHECK(h->path == "/webhook");
  CHECK(h->content_length == 42u);
  CHECK_FALSE(h->chunked);
  auto chunked = ParseRequestHead("POST /webhook HTTP/1.1\r\nTransfer-Encoding: Chunked\r\n\r\n");
  REQUIRE(chunked.ok());
  CHECK(chunked->chunked);
  CHECK_FALSE(chunked->content_length);
  auto none = ParseRequestHead("GET /healthz HTTP/1.0\r\n\r\n");
  REQUIRE(none.ok());
  CHECK_FALSE(none->content_length);
  CHECK_FALSE(none->chunked);
  auto same_twice =
      ParseRequestHead("POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n");
  REQUIRE(same_twice.ok());
  CHECK(same_twice->content_length == 5u);
  auto huge = ParseRequestHead("GET / HTTP/1.1\r\nContent-Length: 1000000000\r\n\r\n");
  REQUIRE(huge.ok());
  CHECK(huge->content_length == 1000000000u);
}

TEST_CASE("ambiguous or malformed heads are refused") {
  for (const char* bad : {
           "GET /\r\n\r\n",
           "GET / SPDY/3\r\n\r\n",
           " / HTTP/1.1\r\n\r\n",
           "GET  HTTP/1.1\r\n\r\n",
           "POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
           "POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n",
           "POST / HTTP/1.1\r\nContent-Length: 5x\r\n\r\n",
           "POST / HTTP/1.1\r\nContent-Length:\r\n\r\n",
           "POST / HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n\r\n",
           "POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
           "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
           "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n",
           "POST / HTTP/1.1\r\nContent-Length: 5\r\n folded\r\n\r\n",
           "POST / HTTP/1.1\r\nno colon here\r\n\r\n",
           "POST / HTTP/1.1\r\n: empty name\r\n\r\n",
       }) {
    INFO(bad);
    CHECK_FALSE(ParseRequestHead(bad).ok());
  }
}
