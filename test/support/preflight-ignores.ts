// What a test host cannot pass of kubeadm's preflight, and only that, so every other check runs
// for real in the tests that init or join through the CLI: the simulated kubelet is no
// `kubelet` binary (KubeletVersion), the host has no cgroup mount of its own
// (SystemVerification), and IPv4 forwarding is off (a new network namespace starts with it off,
// and the root namespace of this machine is not the tests' to change; the built-in CNI's node
// preparation, which would turn it on, does not run here).
export const TEST_HOST_PREFLIGHT_IGNORES: readonly string[] = [
  "KubeletVersion",
  "SystemVerification",
  "FileContent--proc-sys-net-ipv4-ip_forward",
];

/** The same as the value of --ignore-preflight-errors. */
export const TEST_HOST_PREFLIGHT_IGNORES_FLAG = TEST_HOST_PREFLIGHT_IGNORES.join(",");
