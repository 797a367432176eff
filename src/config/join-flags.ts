import { DEFAULT_API_BIND_PORT } from "./defaults.js";
import { checkMixedArguments, mergePreflightIgnores } from "./flags.js";
import type {
  BootstrapTokenDiscovery,
  ConfigDocuments,
  Discovery,
  JoinConfiguration,
  JoinControlPlane,
} from "./types.js";

// kubeadm's `join` flags and how they land in the JoinConfiguration (kubeadm: cmd/join.go
// addJoinConfigFlags, addJoinOtherFlags, newJoinOptions, newJoinData; validation.go
// ValidateMixedArguments for what may accompany --config).

/**
 * `kubeadm join [api-server-endpoint]` flags. A field is "given" when it is not undefined: pass
 * only what the user set on the command line (kubeadm uses pflag's Changed), never the CLI
 * library's defaults. `rootfs` and `dryRunDir` are run-time switches, not configuration.
 */
export interface JoinFlags {
  /** The positional [api-server-endpoint] argument (host:port); not a flag. */
  apiServerEndpoint?: string;
  /** Used for --discovery-token and --tls-bootstrap-token when those are not given. */
  token?: string;
  discoveryToken?: string;
  tlsBootstrapToken?: string;
  /** Repeatable ("sha256:<hex>"). */
  discoveryTokenCaCertHash?: string[];
  discoveryTokenUnsafeSkipCaVerification?: boolean;
  /** A path, a file:// URL or an https:// URL. */
  discoveryFile?: string;
  controlPlane?: boolean;
  certificateKey?: string;
  apiserverAdvertiseAddress?: string;
  apiserverBindPort?: number;
  nodeName?: string;
  criSocket?: string;
  ignorePreflightErrors?: string[];
  skipPhases?: string[];
  patches?: string;
  dryRun?: boolean;
  /** kubeforge's stand-in for kubeadm's KUBEADM_JOIN_DRYRUN_DIR environment variable. */
  dryRunDir?: string;
  rootfs?: string;
}

type JoinFlagField = Exclude<keyof JoinFlags, "apiServerEndpoint">;

/** JoinFlags field → flag name (without "--"); kubeadm's names (cmd/options/constant.go). */
export const JOIN_FLAG_NAMES: { readonly [K in JoinFlagField]-?: string } = {
  token: "token",
  discoveryToken: "discovery-token",
  tlsBootstrapToken: "tls-bootstrap-token",
  discoveryTokenCaCertHash: "discovery-token-ca-cert-hash",
  discoveryTokenUnsafeSkipCaVerification: "discovery-token-unsafe-skip-ca-verification",
  discoveryFile: "discovery-file",
  controlPlane: "control-plane",
  certificateKey: "certificate-key",
  apiserverAdvertiseAddress: "apiserver-advertise-address",
  apiserverBindPort: "apiserver-bind-port",
  nodeName: "node-name",
  criSocket: "cri-socket",
  ignorePreflightErrors: "ignore-preflight-errors",
  skipPhases: "skip-phases",
  patches: "patches",
  dryRun: "dry-run",
  dryRunDir: "dry-run-dir",
  rootfs: "rootfs",
};

/** The flag names of the flags that are given (the positional endpoint is not a flag). */
export function givenJoinFlags(flags: JoinFlags): string[] {
  return (Object.keys(JOIN_FLAG_NAMES) as JoinFlagField[])
    .filter((k) => flags[k] !== undefined)
    .map((k) => JOIN_FLAG_NAMES[k]);
}

/** The control-plane flags kubeadm drops, with a warning, when --control-plane is not given. */
const CONTROL_PLANE_FLAGS = [
  "certificate-key",
  "apiserver-advertise-address",
  "apiserver-bind-port",
];

/** Whether the control-plane flags differ from a defaulted JoinControlPlane (newJoinData). */
function controlPlaneFlagsGiven(flags: JoinFlags): boolean {
  return (
    (flags.certificateKey ?? "") !== "" ||
    (flags.apiserverAdvertiseAddress ?? "") !== "" ||
    (flags.apiserverBindPort !== undefined && flags.apiserverBindPort !== DEFAULT_API_BIND_PORT)
  );
}

/** --apiserver-bind-port is an int32 flag; 0 means kubeadm's default (SetDefaults_APIEndpoint). */
function checkBindPort(port: number): number {
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new Error(`--apiserver-bind-port: ${port} is not a port number between 1 and 65535`);
  }
  return port;
}

/** Settings kubeadm takes from the flags whether or not a config file is given. */
function applyAlwaysAllowed(join: JoinConfiguration, flags: JoinFlags): void {
  // newJoinData: a non-empty --node-name overrides the file's name.
  if (flags.nodeName) (join.nodeRegistration ??= {}).name = flags.nodeName;
  mergePreflightIgnores(join, flags.ignorePreflightErrors);
  // The runner's --skip-phases wins unless it is empty; then the config's list is used.
  if (flags.skipPhases !== undefined && flags.skipPhases.length > 0)
    join.skipPhases = [...flags.skipPhases];
  // cmdutil.ValueFromFlagsOrConfig: a --dry-run that is set (true or false) wins.
  if (flags.dryRun !== undefined) join.dryRun = flags.dryRun;
}

/** Token discovery from the flags; only when the endpoint argument is given (newJoinData). */
function tokenDiscovery(flags: JoinFlags): BootstrapTokenDiscovery | undefined {
  if (flags.apiServerEndpoint === undefined) return undefined;
  return {
    token: flags.discoveryToken || flags.token || "",
    apiServerEndpoint: flags.apiServerEndpoint,
    caCertHashes: [...(flags.discoveryTokenCaCertHash ?? [])],
    unsafeSkipCAVerification: flags.discoveryTokenUnsafeSkipCaVerification ?? false,
  };
}

/** The flags that build the configuration when no config file is given. */
function buildFromFlags(join: JoinConfiguration, flags: JoinFlags, warn: (m: string) => void) {
  const discovery: Discovery = {};
  const bootstrapToken = tokenDiscovery(flags);
  if (bootstrapToken) discovery.bootstrapToken = bootstrapToken;
  if (flags.discoveryFile) discovery.file = { kubeConfigPath: flags.discoveryFile };
  // --token fills the TLS bootstrap token when --tls-bootstrap-token is empty.
  const tlsBootstrapToken = flags.tlsBootstrapToken || flags.token;
  if (tlsBootstrapToken) discovery.tlsBootstrapToken = tlsBootstrapToken;
  join.discovery = discovery;

  const nr = (join.nodeRegistration ??= {});
  if (flags.criSocket) nr.criSocket = flags.criSocket;
  if (flags.patches) join.patches = { directory: flags.patches };

  if (flags.controlPlane === true) {
    const controlPlane: JoinControlPlane = { localAPIEndpoint: {} };
    if (flags.apiserverAdvertiseAddress)
      controlPlane.localAPIEndpoint!.advertiseAddress = flags.apiserverAdvertiseAddress;
    if (flags.apiserverBindPort !== undefined)
      controlPlane.localAPIEndpoint!.bindPort = checkBindPort(flags.apiserverBindPort);
    if (flags.certificateKey) controlPlane.certificateKey = flags.certificateKey;
    join.controlPlane = controlPlane;
  } else if (controlPlaneFlagsGiven(flags)) {
    // kubeadm warns and joins a worker; the flags are dropped.
    warn(
      `[preflight] WARNING: --control-plane is also required when passing control-plane related flags such as [${CONTROL_PLANE_FLAGS.join(", ")}]`,
    );
  }
}

/**
 * Applies `kubeadm join` flags and the endpoint argument to the documents as kubeadm's
 * cmd/join.go newJoinData does. With a config file, only the flags kubeadm allows beside it are
 * accepted (others throw, see checkMixedArguments), the file must hold a JoinConfiguration, and
 * only --node-name, --ignore-preflight-errors, --skip-phases and --dry-run change it. Without
 * one, the flags build the JoinConfiguration. Returns new documents; the input is not modified.
 */
export function applyJoinFlags(
  docs: ConfigDocuments,
  flags: JoinFlags,
  opts: { configFileGiven: boolean; warn?: (msg: string) => void },
): ConfigDocuments {
  const warn = opts.warn ?? (() => {});
  const out = structuredClone(docs);

  if (opts.configFileGiven) {
    // --dry-run-dir is kubeforge's (kubeadm reads an environment variable): not configuration.
    checkMixedArguments(givenJoinFlags(flags).filter((f) => f !== "dry-run-dir"));
    if (!out.join) {
      // util/config/joinconfiguration.go: "no JoinConfiguration found in the supplied config".
      throw new Error(
        "--config: the file holds no JoinConfiguration; kubeadm join reads its settings only from a JoinConfiguration document",
      );
    }
    if (flags.apiServerEndpoint !== undefined) {
      // kubeadm ignores the argument silently when a file is given; say so.
      warn(
        `[preflight] WARNING: the API server endpoint argument "${flags.apiServerEndpoint}" is ignored with --config; the endpoint comes from discovery.bootstrapToken.apiServerEndpoint in the file`,
      );
    }
    applyAlwaysAllowed(out.join, flags);
    return out;
  }

  const join: JoinConfiguration = (out.join ??= {});
  buildFromFlags(join, flags, warn);
  applyAlwaysAllowed(join, flags);
  return out;
}
