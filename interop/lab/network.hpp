#pragma once
#include <cstddef>
#include <cstdint>

// The lab's network and timing, shared by the table of cells (cells.cpp) and the
// orchestration (lab.cpp): addresses of the guest's veth pairs, ports, budgets.
namespace rdmaconf::interop::lab {

inline constexpr std::uint64_t kLabRoceMtu = 1024;  // rxe on the guest's veths (MTU 1500)

inline constexpr const char* kSiwAddr = "192.0.2.1";   // veth0, the initial namespace (siw0)
inline constexpr const char* kOurAddr = "192.0.2.2";   // veth1, namespace eng (our engine)
inline constexpr const char* kSiwPairServer = "192.0.2.3";  // veth2 (siw1); siw against siw
inline constexpr const char* kSiwPairClient = "192.0.2.4";  // veth3 (siw2)
inline constexpr unsigned kFirstPort = 7200;
inline constexpr int kStepTimeoutMs = 8000;            // our engine, any one step
inline constexpr unsigned kCellBudgetS = 30;           // a cell's programs are killed after this
inline constexpr std::size_t kMaxCellsRunAgain = 12;   // red cells with no known cause run once more, up to this many
inline constexpr unsigned kGraceS = 10;                // how long siw's program may outlive ours
inline constexpr unsigned kDutCellTimeoutS = 60;      // a device under test: each program of a cell is killed after this

// RFC 5044 §7.1 (the C bit): CRC is used in both directions when either side asks.
inline constexpr const char* kCrcRule = "RFC 5044 §7.1.1: CRC is used in both directions when either side asks for it";

}  // namespace rdmaconf::interop::lab
