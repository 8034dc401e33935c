// conformance::Params writes a scope's parameters as the text nlohmann::json
// writes for the same object (the JSON report depends on it being the same),
// and a Tally copied or moved keeps its unsettled violations.
#include "conformance/params.hpp"

#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <limits>
#include <string>

#include "conformance/case.hpp"

using rdmaconf::conformance::Artefacts;
using rdmaconf::conformance::Evidence;
using rdmaconf::conformance::json_array;
using rdmaconf::conformance::json_string;
using rdmaconf::conformance::Params;
using rdmaconf::conformance::params_text;
using rdmaconf::conformance::Tally;
using rdmaconf::conformance::Verdict;

BOOST_AUTO_TEST_SUITE(params)

BOOST_AUTO_TEST_CASE(same_text_as_a_document) {
  // Keys set out of order, one set twice, numbers at their limits, nested
  // objects and an array.
  Params side;
  side.set("revision", std::uint8_t{2}).set("crc", true).set("ird", std::uint16_t{65535});
  Params p;
  p.set("zeta", std::uint64_t{0})
      .set("markers_from_initiator", false)
      .set("alpha", std::numeric_limits<std::int64_t>::min())
      .set("big", std::numeric_limits<std::uint64_t>::max())
      .set("initiator", side)
      .set("markers_from_initiator", true)  // the last value counts
      .set("alpha_", -1)
      .set("$schema", 1)
      .set("Zeta", 2)
      .set("alph", 3)
      .set_json("gaps", json_array({Params{}.set("b", 1).set("a", 2).text(), Params{}.text()}));
  nlohmann::json doc;
  doc["zeta"] = 0;
  doc["markers_from_initiator"] = true;
  doc["alpha"] = std::numeric_limits<std::int64_t>::min();
  doc["big"] = std::numeric_limits<std::uint64_t>::max();
  doc["initiator"] = {{"revision", 2}, {"crc", true}, {"ird", 65535}};
  doc["alpha_"] = -1;
  doc["$schema"] = 1;
  doc["Zeta"] = 2;
  doc["alph"] = 3;
  doc["gaps"] = nlohmann::json::array({{{"b", 1}, {"a", 2}}, nlohmann::json::object()});
  BOOST_TEST(p.text() == params_text(doc));
  BOOST_TEST(nlohmann::json::parse(p.text()) == doc);
  BOOST_TEST(Params{}.text() == "{}");
  BOOST_TEST(json_array({}) == "[]");
}

// Strings: nlohmann::json's parser (code we did not write) reads back what
// json_string wrote, for every single octet and for well-formed UTF-8 of
// each length; octets outside a well-formed sequence read back as U+FFFD,
// one each (RFC 3629 section 4 for what is well-formed).
BOOST_AUTO_TEST_CASE(strings_read_back) {
  const std::string fffd = "\xef\xbf\xbd";
  for (int c = 0; c < 256; ++c) {
    const std::string s = "<" + std::string(1, static_cast<char>(c)) + ">";
    const auto back = nlohmann::json::parse(json_string(s), nullptr, false);
    BOOST_TEST_REQUIRE(!back.is_discarded(), "octet " << c);
    BOOST_TEST(back.get<std::string>() == (c < 0x80 ? s : "<" + fffd + ">"), "octet " << c);
  }
  // Every octet at every place of a string long enough to be read eight
  // octets at a time, in a whole word and in the tail.
  for (int c = 0; c < 256; ++c)
    for (std::size_t at = 0; at < 19; ++at) {
      std::string s(19, 'a');
      s[at] = static_cast<char>(c);
      std::string want = s;
      if (c >= 0x80) want.replace(at, 1, fffd);
      const auto back = nlohmann::json::parse(json_string(s), nullptr, false);
      BOOST_TEST_REQUIRE(!back.is_discarded(), "octet " << c << " at " << at);
      BOOST_TEST(back.get<std::string>() == want, "octet " << c << " at " << at);
    }
  for (const std::string ok : {"caf\xc3\xa9", "\xe2\x82\xac \xef\xbf\xbf", "\xf0\x9f\x98\x80", "\xf4\x8f\xbf\xbf", "\xed\x9f\xbf",
                               "tab\t nl\n quote\" back\\ del\x7f"})
    BOOST_TEST(nlohmann::json::parse(json_string(ok)).get<std::string>() == ok);
  // A surrogate, overlong forms, above U+10FFFF, cut short, a stray
  // continuation octet.
  for (const std::string bad : {"\xed\xa0\x80", "\xc0\xaf", "\xe0\x80\xaf", "\xf0\x80\x80\xaf", "\xf4\x90\x80\x80", "\xe2\x82", "\x80"}) {
    std::string want;
    for (std::size_t i = 0; i < bad.size(); ++i) want += fffd;
    BOOST_TEST(nlohmann::json::parse(json_string(bad)).get<std::string>() == want);
  }
  BOOST_TEST(Params{}.set_string("b", "x\ny").set_string("a", "\xff").text() == "{\"a\":\"\\ufffd\",\"b\":\"x\\u000ay\"}");
}

BOOST_AUTO_TEST_CASE(document_text_replaces_invalid_utf8) {
  const std::string t = params_text({{"log", std::string("ok \xff")}});
  BOOST_TEST(t == "{\"log\":\"ok \xef\xbf\xbd\"}");
}

BOOST_AUTO_TEST_CASE(tally_copies_keep_unsettled_violations) {
  Tally t;
  t.pass();
  t.doubtful(Evidence{{7}, {}, "a", "x", "y", "", {}}, 1u);
  Tally copy = t;
  Tally moved = std::move(t);
  const Artefacts none;
  Artefacts lost;
  lost.whole[0] = "frame 3 lost";
  copy.settle(none);   // no artefact: a failure
  moved.settle(lost);  // an artefact in that direction: inconclusive
  BOOST_TEST((copy.verdict() == Verdict::fail));
  BOOST_TEST(copy.failed() == 1u);
  BOOST_TEST((moved.verdict() == Verdict::inconclusive));
  BOOST_TEST(moved.inconclusive_count() == 1u);
  BOOST_REQUIRE(moved.evidence().size() == 1u);
  BOOST_TEST(moved.evidence()[0].detail.find("frame 3 lost") != std::string::npos);
  // Settled once: settling again changes nothing.
  copy.settle(none);
  BOOST_TEST(copy.failed() == 1u);
}

// An artefact of a window of frames explains a violation among them, not
// one elsewhere in the direction.
BOOST_AUTO_TEST_CASE(windowed_artefacts_explain_their_frames_only) {
  Artefacts inverted;
  inverted.windows[0].push_back({10, 12, "frame 12: timestamped before frame 11"});
  Tally near, far, other_side;
  near.doubtful(Evidence{{11, 14}, {}, "a", "x", "y", "", {}}, 1u);
  far.doubtful(Evidence{{40}, {}, "a", "x", "y", "", {}}, 1u);
  other_side.doubtful(Evidence{{11}, {}, "a", "x", "y", "", {}}, 2u);
  near.settle(inverted);
  far.settle(inverted);
  other_side.settle(inverted);
  BOOST_TEST((near.verdict() == Verdict::inconclusive));
  BOOST_TEST((far.verdict() == Verdict::fail));
  BOOST_TEST((other_side.verdict() == Verdict::fail));
}

BOOST_AUTO_TEST_SUITE_END()
