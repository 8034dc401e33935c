#include "conformance/ledger.hpp"

#include <algorithm>
#include <cctype>
#include <set>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

namespace rdmaconf::conformance {

namespace {

// The BCP 14 keywords, longest first where one contains another.
constexpr std::string_view kKeywords[] = {"MUST NOT", "MUST",     "SHALL NOT",   "SHALL",    "SHOULD NOT", "SHOULD",
                                          "NOT RECOMMENDED", "RECOMMENDED", "REQUIRED", "MAY",        "OPTIONAL"};

Level keyword_level(std::string_view k) {
  if (k.starts_with("MUST") || k.starts_with("SHALL") || k == "REQUIRED") return Level::must;
  if (k.starts_with("SHOULD") || k.ends_with("RECOMMENDED")) return Level::should;
  return Level::may;
}

bool word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// The keywords of a sentence, distinct, in the order first seen.
std::vector<std::string> keywords_in(std::string_view s) {
  std::vector<std::string> found;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (i > 0 && word_char(s[i - 1])) continue;
    for (std::string_view k : kKeywords) {
      if (s.substr(i, k.size()) != k) continue;
      const std::size_t end = i + k.size();
      if (end < s.size() && word_char(s[end])) continue;
      if (std::find(found.begin(), found.end(), k) == found.end()) found.emplace_back(k);
      i = end - 1;
      break;
    }
  }
  return found;
}

bool is_blank(std::string_view l) {
  return std::all_of(l.begin(), l.end(), [](char c) { return std::isspace(static_cast<unsigned char>(c)); });
}
std::string_view trim(std::string_view l) {
  while (!l.empty() && std::isspace(static_cast<unsigned char>(l.front()))) l.remove_prefix(1);
  while (!l.empty() && std::isspace(static_cast<unsigned char>(l.back()))) l.remove_suffix(1);
  return l;
}

// A page footer ("Shah, et al.   Standards Track   [Page 13]") or header
// ("RFC 7306   RDMA Protocol Extensions   June 2014").
bool is_footer(std::string_view l) {
  l = trim(l);
  return l.ends_with("]") && l.find("[Page ") != std::string_view::npos;
}
bool is_header(std::string_view l) {
  if (!l.starts_with("RFC ") || l.size() < 12) return false;
  const auto t = trim(l);
  return t.size() >= 4 && std::all_of(t.end() - 4, t.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}

// A section heading at the left margin: "5.2.1.  Atomic ...", "Appendix A.  ...",
// "A.5.1.  ...". Returns the section's number and sets `title`.
std::optional<std::string> heading(std::string_view l, std::string& title) {
  if (l.empty() || std::isspace(static_cast<unsigned char>(l[0]))) return std::nullopt;
  std::string_view rest = l;
  std::string number;
  if (rest.starts_with("Appendix ")) {
    rest.remove_prefix(9);
    if (rest.size() < 2 || !std::isupper(static_cast<unsigned char>(rest[0])) || rest[1] != '.') return std::nullopt;
    number = std::string(1, rest[0]);
    rest.remove_prefix(2);
  } else {
    // Digits and dots, or a capital letter then ".digits", ending in ". ".
    std::size_t i = 0;
    if (std::isupper(static_cast<unsigned char>(rest[0])) && rest.size() > 2 && rest[1] == '.' &&
        std::isdigit(static_cast<unsigned char>(rest[2])))
      i = 2;
    else if (!std::isdigit(static_cast<unsigned char>(rest[0])))
      return std::nullopt;
    while (i < rest.size() && (std::isdigit(static_cast<unsigned char>(rest[i])) || rest[i] == '.')) ++i;
    if (i == 0 || i >= rest.size() || rest[i] != ' ') return std::nullopt;
    // "7.1.2.  Title", or, as RFC 5044 spells one, "7.1.1  Title" (no final
    // dot, a subsection number and two spaces).
    const bool dotted = rest[i - 1] == '.';
    const std::string_view num = rest.substr(0, dotted ? i - 1 : i);
    if (!dotted && (num.find('.') == std::string_view::npos || rest.substr(i, 2) != "  ")) return std::nullopt;
    number = std::string(num);
    rest.remove_prefix(i);
  }
  title = std::string(trim(rest));
  if (title.empty() || !std::isupper(static_cast<unsigned char>(title[0]))) return std::nullopt;
  return number;
}

bool boilerplate(std::string_view title) {
  for (std::string_view t : {"Requirements Language", "References", "Acknowledg", "Contributors", "Normative", "Informative",
                             "Authors' Addresses"})
    if (title.find(t) != std::string_view::npos) return true;
  return false;
}

// A line that starts an item of a list: "o  ", "-  ", "*  ", "1.  ", "a)  ".
bool list_item(std::string_view l) {
  l = trim(l);
  if (l.size() < 3) return false;
  if ((l[0] == 'o' || l[0] == '-' || l[0] == '*') && l[1] == ' ') return true;
  std::size_t i = 0;
  while (i < l.size() && std::isdigit(static_cast<unsigned char>(l[i]))) ++i;
  if (i > 0 && i + 1 < l.size() && (l[i] == '.' || l[i] == ')') && l[i + 1] == ' ') return true;
  return std::islower(static_cast<unsigned char>(l[0])) && l[1] == ')' && l[2] == ' ';
}

// Splits a paragraph into sentences at ". " (and "? ", "! ") before a
// capital, a digit or an opening mark, except after an abbreviation.
std::vector<std::string> sentences_of(const std::string& p) {
  static const std::set<std::string, std::less<>> abbrev = {"e.g", "i.e", "cf", "vs", "al", "Fig", "Sec", "etc"};
  std::vector<std::string> out;
  std::size_t start = 0;
  for (std::size_t i = 0; i + 2 < p.size(); ++i) {
    if ((p[i] != '.' && p[i] != '?' && p[i] != '!') || p[i + 1] != ' ') continue;
    const char next = p[i + 2];
    if (!(std::isupper(static_cast<unsigned char>(next)) || std::isdigit(static_cast<unsigned char>(next)) || next == '(' ||
          next == '"' || next == '['))
      continue;
    std::size_t w = i;
    while (w > start && p[w - 1] != ' ' && p[w - 1] != '(') --w;
    if (abbrev.count(std::string_view(p).substr(w, i - w))) continue;
    out.push_back(p.substr(start, i + 1 - start));
    start = i + 2;
  }
  if (start < p.size()) out.push_back(p.substr(start));
  return out;
}

}  // namespace

std::string_view class_name(StatementClass c) {
  switch (c) {
    case StatementClass::capture: return "capture";
    case StatementClass::live: return "live";
    case StatementClass::unobservable: return "unobservable";
    case StatementClass::sctp: return "sctp";
  }
  return "?";
}

Level LedgerEntry::level() const {
  Level l = Level::may;
  for (const auto& k : keywords) l = std::min(l, keyword_level(k));
  return l;
}

std::string_view LedgerEntry::status() const {
  if (!judged.empty()) return "judged";
  if (!partly.empty()) return "partly";
  if (!provoked.empty()) return "provoked";
  // A statement no capture or scenario can show is an exception by its class (its reason says why).
  if (!exception.empty() || cls == StatementClass::unobservable || cls == StatementClass::sctp) return "exception";
  if (permits()) return "permitted";
  return "todo";
}

std::string section_label(std::string_view section) {
  if (section.starts_with("ch. ") || section.starts_with("Annex ")) return std::string(section);
  return fmt::format("§{}", section);
}

std::string LedgerEntry::cite() const { return fmt::format("{} {}", spec, section_label(section)); }

bool Ledger::has_text(std::string_view spec) const {
  return std::find(without_text_.begin(), without_text_.end(), spec) == without_text_.end();
}

std::string collapse_space(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  bool space = false;
  for (char c : s) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

Ledger Ledger::parse(std::span<const std::string_view> documents) {
  Ledger l;
  for (std::size_t d = 0; d < documents.size(); ++d) {
    nlohmann::json doc;
    try {
      doc = nlohmann::json::parse(documents[d]);
    } catch (const nlohmann::json::exception& e) {
      throw std::runtime_error(fmt::format("ledger document {}: {}", d, e.what()));
    }
    const std::string spec = doc.value("spec", "");
    if (spec.empty() || !doc.contains("entries") || !doc["entries"].is_array())
      throw std::runtime_error(fmt::format("ledger document {}: needs \"spec\" and an \"entries\" array", d));
    l.specs_.push_back(spec);
    const bool public_text = doc.value("text", "") != "none";
    if (!public_text) l.without_text_.push_back(spec);
    for (const auto& j : doc["entries"]) {
      LedgerEntry e;
      auto text = [&](const char* key, bool required) {
        if (!j.contains(key)) {
          if (required) throw std::runtime_error(fmt::format("{} ledger: an entry lacks \"{}\": {}", spec, key, j.dump()));
          return std::string();
        }
        return j.at(key).get<std::string>();
      };
      auto list = [&](const char* key) { return j.contains(key) ? j.at(key).get<std::vector<std::string>>() : std::vector<std::string>{}; };
      try {
        e.id = text("id", true);
        e.spec = spec;
        e.section = text("section", true);
        e.keywords = list("kw");
        e.at = text("at", public_text);
        e.source = text("source", !public_text);
        e.unconfirmed = text("unconfirmed", false);
        e.compliance = list("compliance");
        e.nth = j.value("nth", 0u);
        e.says = text("says", true);
        const std::string cls = text("class", true);
        if (cls == "capture") e.cls = StatementClass::capture;
        else if (cls == "live") e.cls = StatementClass::live;
        else if (cls == "unobservable") e.cls = StatementClass::unobservable;
        else if (cls == "sctp") e.cls = StatementClass::sctp;
        else throw std::runtime_error(fmt::format("class \"{}\" is not capture, live, unobservable or sctp", cls));
        e.reason = text("reason", false);
        e.judged = list("judged");
        e.partly = list("partly");
        e.provoked = list("provoked");
        e.exception = text("exception", false);
      } catch (const nlohmann::json::exception& x) {
        throw std::runtime_error(fmt::format("{} ledger, entry {}: {}", spec, j.value("id", "?"), x.what()));
      } catch (const std::runtime_error& x) {
        throw std::runtime_error(fmt::format("{} ledger, entry {}: {}", spec, j.value("id", "?"), x.what()));
      }
      if (e.keywords.empty()) throw std::runtime_error(fmt::format("{}: no keyword", e.id));
      for (const auto& k : e.keywords)
        if (std::find(std::begin(kKeywords), std::end(kKeywords), k) == std::end(kKeywords))
          throw std::runtime_error(fmt::format("{}: \"{}\" is not a BCP 14 keyword", e.id, k));
      if (e.cls == StatementClass::unobservable && e.reason.empty())
        throw std::runtime_error(fmt::format("{}: an unobservable statement says why (\"reason\")", e.id));
      if (!l.by_id_.emplace(e.id, l.entries_.size()).second) throw std::runtime_error(fmt::format("{}: id used twice", e.id));
      for (const auto* v : {&e.judged, &e.partly})
        for (const auto& c : *v) l.by_case_[c].push_back(l.entries_.size());
      l.entries_.push_back(std::move(e));
    }
  }
  return l;
}

std::vector<const LedgerEntry*> Ledger::for_case(std::string_view case_id) const {
  std::vector<const LedgerEntry*> v;
  if (const auto it = by_case_.find(case_id); it != by_case_.end())
    for (std::size_t i : it->second) v.push_back(&entries_[i]);
  return v;
}

const LedgerEntry* Ledger::find(std::string_view id) const {
  const auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : &entries_[it->second];
}

std::vector<RfcSentence> keyword_sentences(std::string_view text) {
  // Lines, with page breaks (the blank lines before a footer, the footer,
  // the form feed, the header and the blank lines after it) taken out, so
  // that a paragraph broken by a page reads as one.
  std::vector<std::string_view> lines;
  for (std::size_t at = 0; at <= text.size();) {
    std::size_t nl = text.find('\n', at);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view l = text.substr(at, nl - at);
    if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
    lines.push_back(l);
    at = nl + 1;
  }
  std::vector<std::string_view> body;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    std::string_view l = lines[i];
    if (is_footer(l)) {
      while (!body.empty() && is_blank(body.back())) body.pop_back();
      // Skip to the next page's header and the blank lines after it.
      std::size_t j = i + 1;
      while (j < lines.size() && (is_blank(lines[j]) || lines[j].starts_with("\f"))) ++j;
      if (j < lines.size() && is_header(lines[j])) ++j;
      while (j < lines.size() && is_blank(lines[j])) ++j;
      i = j - 1;
      continue;
    }
    if (l.starts_with("\f")) l.remove_prefix(1);
    body.push_back(l);
  }

  std::vector<RfcSentence> out;
  std::string section, title, para;
  bool skip = true;  // the front matter, before the first numbered section
  bool seen_first = false;
  auto flush = [&] {
    if (!para.empty() && !skip)
      for (auto& s : sentences_of(collapse_space(para))) {
        auto kw = keywords_in(s);
        if (kw.empty()) continue;
        if (s.starts_with("The key words") && s.find("2119") != std::string::npos) continue;  // the boilerplate
        out.push_back({section, std::move(s), std::move(kw)});
      }
    para.clear();
  };
  for (std::string_view l : body) {
    std::string t;
    if (auto n = heading(l, t)) {
      // The table of contents is indented; a heading at the margin before
      // "1." (Status of This Memo, Abstract) is front matter.
      if (!seen_first && *n != "1") continue;
      seen_first = true;
      flush();
      section = *n;
      title = t;
      skip = boilerplate(title);
      continue;
    }
    if (is_blank(l)) {
      flush();
      continue;
    }
    if (list_item(l)) flush();
    const std::string_view s = trim(l);
    // A word broken at a hyphen across lines joins without a space.
    if (!para.empty() && para.back() == '-' && para.size() > 1 && std::isalpha(static_cast<unsigned char>(para[para.size() - 2])))
      para += s;
    else {
      if (!para.empty()) para += ' ';
      para += s;
    }
  }
  flush();
  return out;
}

std::vector<std::string> check_ledger(std::span<const LedgerEntry* const> entries, std::string_view spec,
                                      const std::vector<RfcSentence>& sentences) {
  std::vector<std::string> problems;
  std::vector<std::vector<const LedgerEntry*>> owners(sentences.size());
  for (const LedgerEntry* e : entries) {
    if (e->spec != spec) continue;
    const std::string at = collapse_space(e->at);
    std::size_t words = 1;
    for (char c : at) words += c == ' ';
    if (at.empty() || words > 12)
      problems.push_back(fmt::format("{}: the fragment \"{}\" is {} words; a dozen at most", e->id, e->at, words));
    std::vector<std::size_t> hits;
    bool elsewhere = false;
    for (std::size_t i = 0; i < sentences.size(); ++i) {
      if (sentences[i].text.find(at) == std::string::npos) continue;
      if (sentences[i].section == e->section) hits.push_back(i);
      else elsewhere = true;
    }
    if (hits.empty()) {
      problems.push_back(fmt::format("{}: \"{}\" is not in a keyword sentence of {} §{}{}", e->id, e->at, spec, e->section,
                                     elsewhere ? " (it is in another section's)" : ""));
      continue;
    }
    // A fragment locates one sentence, or (where the section repeats its
    // words) one of several by its place, which the entry then gives (nth).
    if (hits.size() > 1 && e->nth == 0) {
      problems.push_back(fmt::format("{}: \"{}\" is in {} keyword sentences of §{}; say which (\"nth\") or quote more", e->id,
                                     e->at, hits.size(), e->section));
      continue;
    }
    const unsigned nth = e->nth ? e->nth : 1;
    if (nth > hits.size()) {
      problems.push_back(fmt::format("{}: occurrence {} of \"{}\" asked, §{} has {}", e->id, nth, e->at, e->section, hits.size()));
      continue;
    }
    const std::size_t hit = hits[nth - 1];
    const auto& s = sentences[hit];
    auto sorted = [](std::vector<std::string> v) {
      std::sort(v.begin(), v.end());
      return v;
    };
    if (sorted(e->keywords) != sorted(s.keywords))
      problems.push_back(fmt::format("{}: keywords {} but the sentence has {}: \"{}\"", e->id, fmt::join(e->keywords, ", "),
                                     fmt::join(s.keywords, ", "), s.text));
    owners[hit].push_back(e);
  }
  for (std::size_t i = 0; i < sentences.size(); ++i) {
    if (owners[i].size() == 1) continue;
    const auto& s = sentences[i];
    if (owners[i].empty())
      problems.push_back(fmt::format("{} §{}: no entry for the {} sentence \"{}\"", spec, s.section, fmt::join(s.keywords, "/"), s.text));
    else
      problems.push_back(fmt::format("{} §{}: {} entries for one sentence (\"{}\"): {}", spec, s.section, owners[i].size(), s.text,
                                     owners[i][0]->id));
  }
  return problems;
}

}  // namespace rdmaconf::conformance
