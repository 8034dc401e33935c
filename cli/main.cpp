// rdmaconf: conformance checking for RDMA-family wire protocols (cli/app.cpp).
#include "cli/app.hpp"

int main(int argc, char** argv) { return rdmaconf::cli::run_main(argc, argv); }
