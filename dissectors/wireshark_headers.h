#pragma once
// The Wireshark headers the plugin (dissectors/plugin.cpp) includes, in one
// list for either way it includes them (inside an extern "C" block for 4.0,
// as they are from 4.2 on).
#include <epan/expert.h>
#include <wsutil/filesystem.h>
#include <wsutil/wslog.h>
#include <epan/packet.h>
#include <epan/prefs.h>
#include <epan/proto.h>
#include <wiretap/pcap-encap.h>
#include <wiretap/wtap.h>
