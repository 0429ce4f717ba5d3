// llmcapd: the only source of the executable; everything else lives in llmcap::server.
#include "server/cli/cli.h"

int main(int argc, char** argv) { return llmcap::server::run_cli(argc, argv); }
