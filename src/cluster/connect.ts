import type { ClusterNodeSpec, ClusterSpec, NodeSshTarget } from "../config/cluster/types.js";
import { parseHostURL } from "../config/cluster/host-url.js";
import { sshTargetOf } from "../config/cluster/ssh.js";
import type { Host } from "../remote/host.js";
import { LocalHost } from "../remote/local.js";
import { SshHost } from "../remote/ssh/host.js";
import { connectDockerNode, isDockerNode } from "./docker-nodes.js";
import type { SshCredentials } from "../remote/ssh/types.js";

// Opens a node's Host from the Cluster file: this machine for `local`, a container on the
// runner's Docker engine for `docker`, SSH otherwise. Key files are read here, on the runner,
// and travel only inside the SSH client.

export interface ConnectOptions {
  /** Reads a file on the runner (private keys). */
  readFile: (path: string) => Promise<Buffer>;
  env: NodeJS.ProcessEnv;
  log?: (line: string) => void;
  /** `docker` nodes: "create" makes or starts the container (up); default: it must run already. */
  docker?: "create" | "existing";
}

async function credentials(
  node: ClusterNodeSpec,
  target: NodeSshTarget,
  opts: ConnectOptions,
): Promise<SshCredentials> {
  const { auth } = target;
  let privateKey: string | Buffer | undefined = auth.privateKey;
  if (privateKey === undefined && auth.privateKeyFile !== undefined) {
    privateKey = await opts.readFile(auth.privateKeyFile).catch((e: unknown) => {
      throw new Error(
        `node ${node.name}: cannot read ssh.privateKeyFile ${auth.privateKeyFile}: ${(e as Error).message}`,
        { cause: e },
      );
    });
  }
  let agent: string | undefined;
  if (auth.agent) {
    agent = opts.env.SSH_AUTH_SOCK;
    if (!agent)
      throw new Error(`node ${node.name}: ssh.agent is true but SSH_AUTH_SOCK is not set`);
  }
  return {
    ...(privateKey !== undefined ? { privateKey } : {}),
    ...(auth.passphrase !== undefined ? { passphrase: auth.passphrase } : {}),
    ...(auth.password !== undefined ? { password: auth.password } : {}),
    ...(agent !== undefined ? { agent } : {}),
  };
}

export async function connectNode(
  spec: ClusterSpec,
  node: ClusterNodeSpec,
  opts: ConnectOptions,
): Promise<Host> {
  if (isDockerNode(node)) {
    return connectDockerNode(spec, node, {
      create: opts.docker === "create",
      ...(opts.log ? { log: opts.log } : {}),
    });
  }
  const target = sshTargetOf(spec, node);
  if (!target) return new LocalHost({ name: node.name });
  const creds = await credentials(node, target, opts);
  return SshHost.connect({
    name: node.name,
    endpoint: target.endpoint,
    credentials: creds,
    hostKeys: target.hostKeys,
    ...(target.jump
      ? { jump: { endpoint: target.jump, credentials: creds, hostKeys: target.hostKeys } }
      : {}),
    ...(target.sudoPassword !== undefined ? { sudoPassword: target.sudoPassword } : {}),
    ...(opts.log ? { log: opts.log } : {}),
  });
}

/** The names the runner reaches a node by (its ssh host), for the API server's SANs. */
export function runnerAddresses(node: ClusterNodeSpec): string[] {
  const url = parseHostURL(node.host);
  return "problem" in url || url.type !== "ssh" ? [] : [url.host];
}
