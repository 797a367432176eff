import { SshHost } from "../../src/remote/ssh/host.js";
import type { SshTestHost } from "./testbed.js";

/** kubeforge's own SSH client to a testbed host, as `user` (root, or the sudo users kf/kfpw). */
export function connectTestHost(h: SshTestHost, user = "root"): Promise<SshHost> {
  return SshHost.connect({
    name: h.name,
    endpoint: { host: h.ssh.host, port: h.ssh.port, user },
    credentials: { privateKey: h.ssh.privateKey },
    hostKeys: { fingerprints: [h.ssh.hostKeyFingerprint] },
  });
}
