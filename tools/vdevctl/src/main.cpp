// vdevctl: the command-line client of vdevd. See `vdevctl --help` and
// docs/vdevctl.md; the commands are the table in commands.cpp.
#include "cli.h"

int main(int argc, char** argv) { return vdev::ctl::runCli(argc, argv); }
