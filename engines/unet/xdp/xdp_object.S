/* The U-Net XDP program's object file, built from unet_xdp.bpf.c, as data
   of the program that loads it (no file to find at run time). */
    .section .rodata
    .balign 8
    .global rdmaconf_unet_xdp_object
    .global rdmaconf_unet_xdp_object_end
rdmaconf_unet_xdp_object:
    .incbin RDMACONF_UNET_XDP_OBJECT
rdmaconf_unet_xdp_object_end:
    .section .note.GNU-stack,"",@progbits
