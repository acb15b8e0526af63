// vdev-cni: the CNI plugin of vdev (docs/containers.md).
#include "plugin.h"

int main() { return vdev::cni::run(); }
