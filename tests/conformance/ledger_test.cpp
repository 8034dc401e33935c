// The requirement ledger against the RFC texts themselves (Debian's
// doc-rfc-std-proposed, fetched by tools/rfc-texts into RDMACONF_RFC_DIR,
// /var/cache/rdmaconf-rfc by default): every sentence with a BCP 14 keyword
// has exactly one entry, found by its fragment in its section, with the
// sentence's keywords; every case names entries and its level and
// citations are theirs. Without the texts the text checks say why they
// skipped; with RDMACONF_REQUIRE_RFC_TEXTS=1 (CI) that is a failure.
#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "conformance/checker.hpp"
#include "conformance/ledger.hpp"
#include "interop/ib/scenarios.hpp"
#include "interop/iwarp/scenarios.hpp"

namespace fs = std::filesystem;
using namespace rdmaconf::conformance;

namespace {

std::string rfc_dir() {
  const char* d = std::getenv("RDMACONF_RFC_DIR");
  return d && *d ? d : "/var/cache/rdmaconf-rfc";
}
bool texts_required() {
  const char* r = std::getenv("RDMACONF_REQUIRE_RFC_TEXTS");
  return r && std::string(r) == "1";
}
std::optional<std::string> rfc_text(std::string_view spec) {
  std::string n;
  for (char c : spec)
    if (c != ' ') n += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::ifstream f(fs::path(rfc_dir()) / (n + ".txt"));
  if (!f) return std::nullopt;
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

const ProtocolFamily& family(const char* name) {
  const auto* f = Registry::get().find(name);
  BOOST_TEST_REQUIRE(f != nullptr);
  BOOST_TEST_REQUIRE(f->ledger() != nullptr);
  return *f;
}
const ProtocolFamily& iwarp() { return family("iwarp"); }

// `s` cut at each `sep`, each piece without its surrounding spaces.
std::vector<std::string> pieces(std::string_view s, char sep) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at <= s.size()) {
    std::size_t end = s.find(sep, at);
    if (end == std::string_view::npos) end = s.size();
    std::string_view p = s.substr(at, end - at);
    while (!p.empty() && p.front() == ' ') p.remove_prefix(1);
    while (!p.empty() && p.back() == ' ') p.remove_suffix(1);
    out.emplace_back(p);
    at = end + 1;
  }
  return out;
}

// A case's citation ("§4.3; RFC 5040 §4.2, §5.1", "ch. 9; Annex A17.9.3")
// as (spec, section) pairs, sections as the ledger writes them.
std::set<std::pair<std::string, std::string>> cited(const CaseInfo& c) {
  std::set<std::pair<std::string, std::string>> out;
  std::string spec(c.spec);
  for (std::string part : pieces(c.section, ';')) {
    if (part.starts_with("RFC ")) {
      const auto sp = part.find(' ', 4);
      spec = part.substr(0, sp);
      part = sp == std::string::npos ? "" : part.substr(sp + 1);
    }
    for (const auto& piece : pieces(part, ',')) {
      if (piece.starts_with("ch. ") || piece.starts_with("Annex ")) {
        out.emplace(spec, piece);
      } else if (const auto p = piece.find("§"); p != std::string::npos) {
        std::size_t b = p + std::string("§").size(), e = b;
        while (e < piece.size() && (std::isalnum(static_cast<unsigned char>(piece[e])) || piece[e] == '.')) ++e;
        out.emplace(spec, piece.substr(b, e - b));
      }
    }
  }
  return out;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(ledger)

// Every keyword sentence of each RFC has exactly one entry; every entry's
// fragment is in its section and its keywords are the sentence's.
BOOST_AUTO_TEST_CASE(every_keyword_sentence_has_its_entry) {
  const auto& l = *iwarp().ledger();
  std::vector<const LedgerEntry*> all;
  for (const auto& e : l.entries()) all.push_back(&e);
  int checked = 0;
  for (const auto& spec : l.specs()) {
    const auto text = rfc_text(spec);
    if (!text) {
      BOOST_TEST_MESSAGE(fmt::format("{}: no text in {} (tools/rfc-texts fetches it); not checked", spec, rfc_dir()));
      BOOST_TEST(!texts_required(), spec << " text missing from " << rfc_dir());
      continue;
    }
    const auto sentences = keyword_sentences(*text);
    BOOST_TEST(sentences.size() >= 50u, spec);
    const auto problems = check_ledger(all, spec, sentences);
    for (const auto& p : problems) BOOST_ERROR(p);
    ++checked;
  }
  BOOST_TEST_MESSAGE(fmt::format("{} of {} RFC texts checked", checked, l.specs().size()));
}

// Each entry is needed: without it, the check finds a sentence with no
// entry. (A ledger test that passed with an entry gone would not hold the
// ledger complete.)
BOOST_AUTO_TEST_CASE(removing_any_entry_fails) {
  const auto& l = *iwarp().ledger();
  std::map<std::string, std::vector<RfcSentence>> sentences;
  for (const auto& spec : l.specs())
    if (const auto text = rfc_text(spec)) sentences[spec] = keyword_sentences(*text);
  if (sentences.size() < l.specs().size()) {
    BOOST_TEST(!texts_required());
    return;
  }
  std::vector<const LedgerEntry*> all;
  for (const auto& e : l.entries()) all.push_back(&e);
  for (std::size_t i = 0; i < all.size(); ++i) {
    std::vector<const LedgerEntry*> less = all;
    less.erase(less.begin() + static_cast<std::ptrdiff_t>(i));
    BOOST_TEST(!check_ledger(less, all[i]->spec, sentences[all[i]->spec]).empty(), all[i]->id << " could be removed unnoticed");
  }
  // A wrong section fails too.
  LedgerEntry moved = l.entries().front();
  moved.section = "99";
  std::vector<const LedgerEntry*> with{&moved};
  BOOST_TEST(!check_ledger(with, moved.spec, sentences[moved.spec]).empty());
}

// The extractor on text made here: page breaks, a heading without its
// final dot, list items, the boilerplate sentence and repeated sentences.
BOOST_AUTO_TEST_CASE(keyword_sentences_of_a_small_text) {
  const std::string text =
      "1.  Introduction\n\n"
      "   The key words \"MUST\", \"MAY\" in this document are to be interpreted as described in RFC 2119.\n\n"
      "2.1  Section without its dot\n\n"
      "   A sender MUST set the field to one. A receiver MAY\n"
      "   ignore it; the rest is\n\n"
      "Someone, et al.              Standards Track                    [Page 3]\n"
      "\f\n"
      "RFC 9999                     Example                          June 2014\n\n\n"
      "   continued here and SHOULD be read as one sentence.\n\n"
      "   o  An item MUST NOT be merged with the next.\n"
      "   o  Nor this one, which says nothing.\n\n"
      "3.  References\n\n"
      "   [RFC2119] ... MUST not count.\n";
  const auto s = keyword_sentences(text);
  BOOST_TEST_REQUIRE(s.size() == 3u);
  BOOST_TEST(s[0].section == "2.1");
  BOOST_TEST(s[0].text == "A sender MUST set the field to one.");
  BOOST_TEST(s[1].text == "A receiver MAY ignore it; the rest is continued here and SHOULD be read as one sentence.");
  BOOST_TEST((s[1].keywords == std::vector<std::string>{"MAY", "SHOULD"}));
  BOOST_TEST(s[2].text == "o An item MUST NOT be merged with the next.");
  BOOST_TEST((s[2].keywords == std::vector<std::string>{"MUST NOT"}));
}

// Every case names the statements it judges; its level is the strongest
// keyword among them and it cites exactly their sections; every id the
// ledger names is a case, every scenario one of the live catalog.
BOOST_AUTO_TEST_CASE(cases_and_statements_agree) {
  for (const char* name : {"iwarp", "ib"}) {
    const auto& f = family(name);
    const auto& l = *f.ledger();
    std::set<std::string> ids;
    for (const auto* c : f.cases()) {
      ids.insert(std::string(c->id));
      const auto st = l.for_case(c->id);
      BOOST_TEST(!st.empty(), c->id << " judges no ledger statement");
      if (st.empty()) continue;
      Level strongest = Level::may;
      std::set<std::pair<std::string, std::string>> sections;
      for (const auto* e : st) {
        strongest = std::min(strongest, e->level());
        // (An InfiniBand entry may name several locations: "ch. 9; Annex A17".)
        for (const auto& s : pieces(e->section, ';')) sections.emplace(e->spec, s);
      }
      BOOST_TEST(level_name(c->level) == level_name(strongest), c->id << ": level " << level_name(c->level) << ", its statements' "
                                                                     << level_name(strongest));
      const auto cites = cited(*c);
      std::string want;
      for (const auto& [spec, sec] : sections) want += fmt::format(" {} {}", spec, section_label(sec));
      BOOST_TEST((cites == sections), c->id << " cites \"" << c->spec << " " << c->section << "\"; its statements are in" << want);
    }
    for (const auto& e : l.entries()) {
      for (const auto* v : {&e.judged, &e.partly})
        for (const auto& id : *v) BOOST_TEST(ids.count(id) == 1u, e.id << " names " << id << ", which is no case of " << name);
      for (const auto& s : e.provoked) {
        // (iWARP: our responder's Reply faults too, as the lab names them: "reply-fault-key".)
        const bool known = std::string_view(name) == "iwarp"
                               ? rdmaconf::interop::iwarp::find_scenario(s) != nullptr ||
                                     (s.starts_with("reply-fault-") &&
                                      rdmaconf::interop::iwarp::find_reply_fault(std::string_view(s).substr(12)) != nullptr)
                               : rdmaconf::interop::ib::find_scenario(s) != nullptr;
        BOOST_TEST(known, e.id << " names scenario " << s << ", which is not in the catalog");
      }
      if (e.permits()) BOOST_TEST((e.judged.empty() && e.partly.empty()), e.id << ": a permission is accepted, not judged");
    }
  }
}

// A specification with no public text (the IBTA volume): every entry names
// the public sources its rule comes from, and no section that only memory
// gives: a location is a chapter, an annex or a section a source quotes,
// and what the catalog cited before is kept apart as unconfirmed.
BOOST_AUTO_TEST_CASE(entries_without_a_public_text_name_their_sources) {
  const auto& l = *family("ib").ledger();
  BOOST_TEST_REQUIRE(l.specs().size() == 1u);
  BOOST_TEST(!l.has_text(l.specs().front()));
  BOOST_TEST(iwarp().ledger()->has_text("RFC 5044"));
  // The sections public sources give (docs/other-references.md says where).
  const std::set<std::string> quoted = {"7.8", "Annex A17.9.3"};
  BOOST_TEST(l.entries().size() >= 50u);
  for (const auto& e : l.entries()) {
    BOOST_TEST(e.source.size() >= 20u, e.id << ": no source");
    for (const auto& s : pieces(e.section, ';')) {
      const bool chapter = s.starts_with("ch. ") && s.find('.', 4) == std::string::npos;
      const bool annex = s == "Annex A14" || s == "Annex A16" || s == "Annex A17";
      BOOST_TEST((chapter || annex || quoted.count(s) == 1u), e.id << ": section " << s << " is no chapter, annex or quoted section");
    }
    for (const auto& c : e.compliance) BOOST_TEST(e.source.find(c) != std::string::npos, e.id << ": " << c << " not in its source");
  }
}

BOOST_AUTO_TEST_SUITE_END()
