"""Seeds of the U-Net family's fuzz targets. Called by fuzz/make_seeds.py."""
from seedlib import flagged_frames, ip_udp


def seeds(captures, s):
    unet = [f for cap in captures if cap.name.startswith("unet") for f in cap.frames[:6]]
    # fuzz_unet: the golden U-Net frames, with buffers given and channels opened
    # as they arrive (flags 0x03), some made well formed (0x07), a teardown in
    # the middle (0x0b).
    s.put("fuzz_unet", "golden", flagged_frames(0x03, [(0x03, f) for f in unet[:24]]))
    s.put("fuzz_unet", "small-buffers", flagged_frames(0x08, [(0x07, f) for f in unet[:12]]))
    s.put("fuzz_unet", "teardown", flagged_frames(0x01, [(0x03, f) for f in unet[:4]] + [(0x0b, f) for f in unet[4:8]]))
    # fuzz_unet_xdp: single golden U-Net frames with each flag combination (an
    # endpoint, a channel, well formed, the channel check off), and frames the
    # kernel keeps (IPv4 UDP, ARP).
    for k, f in enumerate(unet[:8]):
        for flags in (0x00, 0x01, 0x03, 0x07, 0x09):
            s.put("fuzz_unet_xdp", f"golden-{k}-{flags:02x}", bytes([flags]) + f)
    s.put("fuzz_unet_xdp", "ipv4", bytes([0x03]) + ip_udp(False, 7000, b"k" * 40))
    s.put("fuzz_unet_xdp", "arp", bytes([0x03]) + b"\xff" * 6 + b"\x02\x00\x0a\x55\x00\x01" + b"\x08\x06" + b"\x00" * 46)
