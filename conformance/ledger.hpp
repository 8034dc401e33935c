#pragma once
// The requirement ledger: one entry per normative sentence of a
// specification (a sentence with a BCP 14 keyword), in our own words, with
// how it is observed (class) and what of the suite judges or provokes it
// (status). A family's ledger is JSON (conformance/<family>/ledger/) built
// into the program; the cases' requirement lists, `rdmaconf ledger`,
// `report coverage`, the dashboard and docs/spec-references.md all read it.
//
// The ledger is held against the specification's text itself:
// `check_ledger` finds every keyword sentence of an RFC text file and
// requires exactly one entry for each, whose fragment occurs in that
// sentence of that section and whose keywords are the sentence's.
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "conformance/case.hpp"

namespace rdmaconf::conformance {

// How a statement can be observed.
enum class StatementClass {
  capture,       // judged from a capture of both directions
  live,          // shown only by provoking a peer (a scenario)
  unobservable,  // local interface, internal state, timing no capture shows: `reason` says which
  sctp,          // about the SCTP adaptation only (out of scope: iWARP over TCP)
};
std::string_view class_name(StatementClass c);  // "capture", "live", "unobservable", "sctp"

struct LedgerEntry {
  std::string id;        // stable: "rfc7306-5.2-1"
  std::string spec;      // "RFC 7306"
  std::string section;   // "5.2", "A.5.1"
  std::vector<std::string> keywords;  // as the sentence has them: "MUST", "MUST NOT", "MAY"
  std::string at;        // a fragment of the sentence (a dozen words at most) that locates it
  unsigned nth = 0;      // which of the section's sentences holding the fragment, when several do (0: not given)
  std::string says;      // our paraphrase
  // Specifications with no public text (InfiniBand): the public sources the
  // rule comes from, the subsection cited before the ledger that no public
  // text confirms, and compliance statement numbers a public source gives.
  std::string source;
  std::string unconfirmed;
  std::vector<std::string> compliance;
  StatementClass cls = StatementClass::capture;
  std::string reason;    // why not observable (class unobservable), or what limits it
  std::vector<std::string> judged;    // case ids that judge it fully
  std::vector<std::string> partly;    // case ids that judge part of it
  std::vector<std::string> provoked;  // live scenario names that provoke it
  std::string exception;              // why it is neither judged nor provoked (when it is not)

  // The strongest keyword's level (MUST/SHALL/REQUIRED, SHOULD/RECOMMENDED, MAY/OPTIONAL).
  Level level() const;
  // Only permits (MAY, OPTIONAL): behaviour our cases must accept.
  bool permits() const { return level() == Level::may; }
  // judged, partly, provoked, exception, permitted or todo.
  std::string_view status() const;
  std::string cite() const;  // "RFC 7306 §5.2", "IBTA Vol.1 ch. 9", "IBTA Vol.1 Annex A17.9.3"
};

class Ledger {
 public:
  // Parses one or more ledger documents (JSON: {"spec": "RFC 7306", "entries": [...]});
  // throws std::runtime_error naming the document and entry on a malformed one.
  static Ledger parse(std::span<const std::string_view> documents);
  const std::vector<LedgerEntry>& entries() const { return entries_; }
  // The specs, in document order ("RFC 5044", ...).
  const std::vector<std::string>& specs() const { return specs_; }
  // Whether a spec's text is public, so that the ledger is held to it
  // (a document says "text": "none" when it is not; its entries then name
  // their sources instead of a fragment of the text).
  bool has_text(std::string_view spec) const;
  // The entries naming a case id (judged or partly), in ledger order.
  std::vector<const LedgerEntry*> for_case(std::string_view case_id) const;
  const LedgerEntry* find(std::string_view id) const;

 private:
  std::vector<LedgerEntry> entries_;
  std::vector<std::string> specs_;
  std::vector<std::string> without_text_;
  std::map<std::string, std::vector<std::size_t>, std::less<>> by_case_;
  std::map<std::string, std::size_t, std::less<>> by_id_;
};

// ---- The specification's text.

// A sentence of an RFC that carries a BCP 14 keyword (RFC 2119, RFC 8174:
// the upper-case forms only), with its section and whitespace collapsed.
struct RfcSentence {
  std::string section;  // "5.2", "A.5.1"
  std::string text;
  std::vector<std::string> keywords;  // distinct, in first-seen order
};
// Every keyword sentence of an RFC in plain-text form (page headers and
// footers removed, paragraphs joined across page breaks), outside the
// boilerplate sections (Requirements Language, References, Acknowledgments).
std::vector<RfcSentence> keyword_sentences(std::string_view rfc_text);
// Collapses runs of white space into one space and trims the ends.
std::string collapse_space(std::string_view s);
// A section as a citation writes it: "§4.1", but "ch. 9" and "Annex A17.9.3" as they are.
std::string section_label(std::string_view section);

// Holds `entries` (those of `spec`) against that spec's keyword sentences:
// each sentence has exactly one entry, found by its fragment in that
// section, with the sentence's keywords. Returns one line per problem.
std::vector<std::string> check_ledger(std::span<const LedgerEntry* const> entries, std::string_view spec,
                                      const std::vector<RfcSentence>& sentences);

}  // namespace rdmaconf::conformance
