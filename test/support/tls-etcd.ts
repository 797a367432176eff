import { spawn, type ChildProcess } from "node:child_process";
import { closeSync, openSync } from "node:fs";

// A one-member etcd (the machine's, Debian's) serving clients over mutual TLS on 127.0.0.1, for
// tests of the simulated API server's etcd client. Its output goes to a file, not a pipe: a pipe
// is drained by the test process's event loop, which a synchronous store call of a simulated API
// server in that process blocks while it waits for etcd.

export interface TlsEtcdOptions {
  dataDir: string;
  clientPort: number;
  peerPort: number;
  /** etcd's serving certificate and key, and the CA its clients' certificates must chain to. */
  certFile: string;
  keyFile: string;
  trustedCAFile: string;
  /** Where its output is appended. */
  logFile: string;
}

export function startTlsEtcd(o: TlsEtcdOptions): ChildProcess {
  const log = openSync(o.logFile, "a");
  const client = `https://127.0.0.1:${o.clientPort}`;
  const peer = `http://127.0.0.1:${o.peerPort}`;
  const child = spawn(
    "etcd",
    [
      "--name=e1",
      `--data-dir=${o.dataDir}`,
      `--listen-client-urls=${client}`,
      `--advertise-client-urls=${client}`,
      `--listen-peer-urls=${peer}`,
      `--initial-advertise-peer-urls=${peer}`,
      `--initial-cluster=e1=${peer}`,
      `--cert-file=${o.certFile}`,
      `--key-file=${o.keyFile}`,
      `--trusted-ca-file=${o.trustedCAFile}`,
      "--client-cert-auth=true",
      "--unsafe-no-fsync",
    ],
    { stdio: ["ignore", log, log] },
  );
  closeSync(log);
  return child;
}
