import { homedir, tmpdir } from "node:os";
import { dirname, isAbsolute, join, resolve } from "node:path";
import { ConfigError, type LocatedProblem } from "../config/load.js";
import { DEFAULT_CLUSTER_NAME } from "../config/cluster/defaults.js";
import { loadClusterSpec } from "../config/cluster/load.js";
import type { ClusterOverrides, ClusterSpec } from "../config/cluster/types.js";
import { splitSkipPhases } from "../cluster/up/skip-phases.js";
import { dockerNodes, parseNodeCounts } from "../config/docker/expand.js";
import { parseImageSources, splitImageList, type ImageSource } from "../config/image-sources.js";
import { quoteValue } from "../config/values.js";
import {
  type ClusterIPFamily,
  IP_FAMILIES,
  parseFeatureGateList,
} from "../config/cluster/shortcuts.js";
import { clusterVersionProblem, normalizeClusterVersion } from "../config/cluster/version.js";
import { type InputFileError, readInputFile, readInputFileSync } from "../remote/runner-files.js";
import { type ActionUpgrade, readUpgradeInputs } from "./upgrade-inputs.js";

// The action's inputs (action.yml), read and checked, and the Cluster they describe. The post
// step reads the same inputs (GitHub gives post steps the same INPUT_* variables), so nothing
// here depends on what the main step did. Every problem is one sentence starting with the input.

export type Teardown = "auto" | "always" | "never";
/** debug: every host's commands, the error's causes and stacks (as with ACTIONS_STEP_DEBUG). */
export type Verbosity = "normal" | "debug";
/** GitHub's job.status (the job-status input's default, evaluated again for the post step). */
export type JobStatus = "success" | "failure" | "cancelled";

export interface ActionInputs {
  /**
   * The `name` input; undefined when not given. It wins over the Cluster file's `name`, and the
   * cluster's name (this or the file's) names the state folder on the runner (stateDirOf).
   */
  name?: string;
  dryRun: boolean;
  /** true: kubeforge and kubectl on PATH, no cluster built. */
  installOnly: boolean;
  /** auto (default): remote hosts are torn down in post, the runner left alone; always: the runner too; never: keep all */
  teardown: Teardown;
  verbosity: Verbosity;
  /**
   * The job's status as GitHub evaluated the input for this step — for the post step, after the
   * job's other steps ran; undefined outside GitHub (the input is empty).
   */
  jobStatus?: JobStatus;
  /** The `cluster` input as given: a Cluster file path or the YAML itself; undefined = one node on the runner. */
  cluster?: string;
  /** The `kubeadm-config` input as given: a file path or the YAML itself. */
  kubeadmConfig?: string;
  /** Secret (the ssh-private-key input); the main step masks it before anything else. */
  sshPrivateKey?: string;
  /** Secrets too: ssh-private-key-passphrase, ssh-password, ssh-sudo-password. */
  sshPassphrase?: string;
  sshPassword?: string;
  sshSudoPassword?: string;
  /**
   * The kubectl-version input in the Cluster's form (an exact "v1.35.2", "stable-1.35", a
   * label); undefined: kubectl is of the cluster's version.
   */
  kubectlVersion?: string;
  /** The load-images input: images and archives imported into every node after `up`. */
  loadImages?: ImageSource[];
  /** upgrade-to and its settings: the cluster is upgraded after it is built. */
  upgrade?: ActionUpgrade;
  /**
   * Everything else, as Cluster overrides (each `from` names its input). Paths in cni and
   * kubelet-binary are resolved against the workspace; kubeadm-config and ssh-private-key are
   * added by clusterFromInputs.
   */
  overrides: ClusterOverrides;
}

/** Input names, as action.yml declares them. */
export const INPUTS = [
  "kubernetes-version",
  "upgrade-to",
  "upgrade-via",
  "upgrade-worker-batch",
  "upgrade-drain-timeout",
  "upgrade-probes",
  "upgrade-max-api-downtime",
  "upgrade-kubelet-binary",
  "upgrade-max-workload-error-rate",
  "upgrade-max-workload-downtime",
  "upgrade-probe-manifest",
  "upgrade-probe-command",
  "cluster",
  "ssh-private-key",
  "ssh-private-key-passphrase",
  "ssh-password",
  "ssh-sudo-password",
  "ssh-host-key-fingerprints",
  "kubeadm-config",
  "pod-network-cidr",
  "service-cidr",
  "ip-family",
  "feature-gates",
  "kubectl-version",
  "cni",
  "kubelet-binary",
  "wait",
  "skip-phases",
  "teardown",
  "dry-run",
  "name",
  "verbosity",
  "nodes",
  "load-images",
  "storage",
  "registry",
  "install-only",
  "job-status",
] as const;

/** Inputs whose values are secrets: registered with the runner before anything is read. */
export const SECRET_INPUTS = [
  "ssh-private-key",
  "ssh-private-key-passphrase",
  "ssh-password",
  "ssh-sudo-password",
] as const;

const TEARDOWN: Teardown[] = ["auto", "always", "never"];
const VERBOSITY: Verbosity[] = ["normal", "debug"];
const JOB_STATUS: JobStatus[] = ["success", "failure", "cancelled"];
// The YAML 1.2 core schema booleans, as @actions/core's getBooleanInput accepts them.
const TRUE = ["true", "True", "TRUE"];
const FALSE = ["false", "False", "FALSE"];
const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** Items of a list input: separated by commas, spaces or new lines. */
function list(value: string): string[] {
  return value
    .split(/[\s,]+/)
    .map((s) => s.trim())
    .filter((s) => s !== "");
}

function workspaceOf(env: NodeJS.ProcessEnv): string {
  return env.GITHUB_WORKSPACE || process.cwd();
}

/** A path or URL input: URLs and names as given, relative paths against the workspace. */
function runnerPath(value: string, env: NodeJS.ProcessEnv): string {
  if (/^[a-zA-Z][a-zA-Z0-9+.-]*:\/\//.test(value) || value.startsWith("~")) return value;
  return isAbsolute(value) ? value : resolve(workspaceOf(env), value);
}

/**
 * Reads and checks the inputs. `getInput` returns "" for an input not given (as
 * core.getInput does). Throws an Error whose message starts with "input <name>: ".
 */
type InputName = (typeof INPUTS)[number];
type GetInput = (name: InputName) => string;

const fail = (name: string, problem: string): never => {
  throw new Error(`input ${name}: ${problem}`);
};

export function readInputs(
  getInput: (name: string) => string,
  env: NodeJS.ProcessEnv = process.env,
): ActionInputs {
  const get: GetInput = (name) => getInput(name).trim();
  const step = readStepSettings(get);
  const overrides = readOverrides(get, env, step.name);
  const kubectlText = get("kubectl-version");
  const kubectlVersion = kubectlText === "" ? undefined : normalizeClusterVersion(kubectlText);
  if (kubectlText !== "" && kubectlVersion === undefined) {
    fail("kubectl-version", clusterVersionProblem(kubectlText)!);
  }
  const images = parseImageSources(splitImageList(get("load-images")), (p) => runnerPath(p, env));
  if ("problem" in images) fail("load-images", images.problem);
  const upgrade = readUpgradeInputs(get, step.installOnly, (p) => runnerPath(p, env));

  // Not trimmed: a key's text is what it is (a trailing new line is part of the PEM format).
  const sshPrivateKey = getInput("ssh-private-key");
  // Passwords are not trimmed either: a space may be part of one.
  const sshPassphrase = getInput("ssh-private-key-passphrase");
  const sshPassword = getInput("ssh-password");
  const sshSudoPassword = getInput("ssh-sudo-password");
  const cluster = getInput("cluster");
  const kubeadmConfig = getInput("kubeadm-config");
  return {
    ...step,
    ...(cluster.trim() !== "" ? { cluster } : {}),
    ...(kubeadmConfig.trim() !== "" ? { kubeadmConfig } : {}),
    ...(sshPrivateKey.trim() !== "" ? { sshPrivateKey } : {}),
    ...(sshPassphrase !== "" ? { sshPassphrase } : {}),
    ...(sshPassword !== "" ? { sshPassword } : {}),
    ...(sshSudoPassword !== "" ? { sshSudoPassword } : {}),
    ...(kubectlVersion !== undefined ? { kubectlVersion } : {}),
    ...(Array.isArray(images) && images.length > 0 ? { loadImages: images } : {}),
    ...(upgrade ? { upgrade } : {}),
    overrides,
  };
}

/** The inputs about the step itself rather than the cluster. */
function readStepSettings(
  get: GetInput,
): Pick<ActionInputs, "name" | "dryRun" | "installOnly" | "teardown" | "verbosity" | "jobStatus"> {
  const name = get("name");
  if (name !== "" && (name.length > 63 || !DNS1123_LABEL.test(name))) {
    fail(
      "name",
      `${quoteValue(name)} is not a DNS label (at most 63 lower-case letters, digits and '-', starting and ending with a letter or digit)`,
    );
  }
  const dryRunText = get("dry-run");
  if (dryRunText !== "" && !TRUE.includes(dryRunText) && !FALSE.includes(dryRunText)) {
    fail("dry-run", `${quoteValue(dryRunText)} is not true or false`);
  }
  const installOnlyText = get("install-only");
  if (
    installOnlyText !== "" &&
    !TRUE.includes(installOnlyText) &&
    !FALSE.includes(installOnlyText)
  ) {
    fail("install-only", `${quoteValue(installOnlyText)} is not true or false`);
  }
  if (TRUE.includes(installOnlyText) && TRUE.includes(dryRunText)) {
    fail(
      "install-only",
      "builds no cluster, so there is nothing for dry-run to plan: give one or the other",
    );
  }
  const teardown = (get("teardown") || "auto") as Teardown;
  if (!TEARDOWN.includes(teardown)) {
    fail("teardown", `${quoteValue(teardown)} is not one of ${TEARDOWN.join(", ")}`);
  }
  const verbosity = (get("verbosity") || "normal") as Verbosity;
  if (!VERBOSITY.includes(verbosity)) {
    fail("verbosity", `${quoteValue(verbosity)} is not one of ${VERBOSITY.join(", ")}`);
  }
  const jobStatus = get("job-status");
  if (jobStatus !== "" && !JOB_STATUS.includes(jobStatus as JobStatus)) {
    fail(
      "job-status",
      `${quoteValue(jobStatus)} is not one of ${JOB_STATUS.join(", ")} (leave it unset: GitHub fills it in)`,
    );
  }
  return {
    ...(name !== "" ? { name } : {}),
    dryRun: TRUE.includes(dryRunText),
    installOnly: TRUE.includes(installOnlyText),
    teardown,
    verbosity,
    ...(jobStatus !== "" ? { jobStatus: jobStatus as JobStatus } : {}),
  };
}

/** The inputs that change the Cluster, as overrides naming their input. */
function readOverrides(
  get: GetInput,
  env: NodeJS.ProcessEnv,
  name: string | undefined,
): ClusterOverrides {
  const overrides: ClusterOverrides = { from: {} };
  const from = overrides.from!;
  const text = (key: Exclude<keyof ClusterOverrides, "from">, input: string, value: string) => {
    if (value === "") return;
    (overrides as Record<string, unknown>)[key] = value;
    from[key] = `input ${input}`;
  };
  if (name !== undefined) text("name", "name", name);
  text("kubernetesVersion", "kubernetes-version", get("kubernetes-version"));
  text("podSubnet", "pod-network-cidr", get("pod-network-cidr"));
  text("serviceSubnet", "service-cidr", get("service-cidr"));
  const family = get("ip-family");
  if (family !== "") {
    if (!IP_FAMILIES.includes(family as ClusterIPFamily)) {
      fail("ip-family", `${quoteValue(family)} is not one of ${IP_FAMILIES.join(", ")}`);
    }
    overrides.ipFamily = family as ClusterIPFamily;
    from.ipFamily = "input ip-family";
  }
  const gates = parseFeatureGateList(get("feature-gates"));
  if ("problem" in gates) fail("feature-gates", gates.problem);
  else if (Object.keys(gates.gates).length > 0) {
    overrides.featureGates = gates.gates;
    from.featureGates = "input feature-gates";
  }
  text("wait", "wait", get("wait"));
  const cni = get("cni");
  // A manifest file is relative to the workspace; any other word is left for validation.
  const cniFile = /\//.test(cni) || /\.(ya?ml|json)$/i.test(cni);
  text("cni", "cni", cniFile ? runnerPath(cni, env) : cni);
  text("storage", "storage", get("storage"));
  // true/True/TRUE as the other boolean inputs; the Cluster field takes true, false or a port.
  const registry = get("registry");
  text(
    "registry",
    "registry",
    TRUE.includes(registry) ? "true" : FALSE.includes(registry) ? "false" : registry,
  );
  const kubelet = get("kubelet-binary");
  if (kubelet !== "") text("kubeletBinary", "kubelet-binary", runnerPath(kubelet, env));
  const skip = list(get("skip-phases"));
  // up's phases and init's and join's (up checks them too, naming the Cluster's field instead).
  splitSkipPhases(skip, "input skip-phases");
  if (skip.includes("kubeconfig")) {
    fail(
      "skip-phases",
      "kubeconfig cannot be skipped here: the action hands the cluster to the next steps through the admin.conf that phase writes",
    );
  }
  if (skip.length > 0) {
    overrides.skipPhases = skip;
    from.skipPhases = "input skip-phases";
  }
  const counts = get("nodes");
  if (counts !== "") {
    const parsed = parseNodeCounts(counts);
    if ("problem" in parsed) fail("nodes", parsed.problem);
    else {
      overrides.nodes = dockerNodes(parsed);
      from.nodes = "input nodes";
    }
  }
  const pins = list(get("ssh-host-key-fingerprints"));
  if (pins.length > 0) {
    overrides.hostKeyFingerprints = pins;
    from.hostKeyFingerprints = "input ssh-host-key-fingerprints";
  }
  return overrides;
}

/**
 * Where a cluster's files go on the runner: RUNNER_TEMP/kubeforge-<cluster name>, the name being
 * the Cluster's own (the `name` input when given, else the Cluster file's): two steps building
 * two clusters get two folders without a `name` input.
 */
export function stateDirOf(clusterName: string, env: NodeJS.ProcessEnv): string {
  // Outside a runner (a local try of main.js), the system's temporary folder.
  const temp = env.RUNNER_TEMP || tmpdir();
  return join(temp, `kubeforge-${clusterName}`);
}

/**
 * The state folder when the Cluster could not be read (bad inputs): the `name` input's, else
 * the default cluster's; only kubeforge's log goes there.
 */
export function fallbackStateDir(inputs: ActionInputs, env: NodeJS.ProcessEnv): string {
  return stateDirOf(inputs.name ?? DEFAULT_CLUSTER_NAME, env);
}

/**
 * A path-or-YAML input: a one-line value naming a file is read; anything else is the YAML
 * itself. A one-line value that names no file and is not YAML is an error naming the input.
 */
async function pathOrText(
  input: string,
  value: string,
  env: NodeJS.ProcessEnv,
): Promise<{ text: string; source: string; baseDir: string }> {
  const workspace = workspaceOf(env);
  if (!value.trim().includes("\n")) {
    const path = resolve(workspace, value.trim());
    try {
      const text = await readInputFile(path, "the file");
      return { text, source: value.trim(), baseDir: dirname(path) };
    } catch (e) {
      if ((e as InputFileError).code !== "ENOENT") {
        throw new Error(`input ${input}: ${(e as Error).message}`, { cause: e });
      }
    }
    if (!/:\s/.test(value)) {
      throw new Error(
        `input ${input}: ${quoteValue(value.trim())} is neither a file (looked in ${workspace}) nor YAML`,
      );
    }
  }
  return { text: value, source: `input ${input}`, baseDir: workspace };
}

/** The Cluster file every run without a `cluster` input builds: one node on the runner. */
const DEFAULT_CLUSTER_TEXT = "apiVersion: kubeforge.dev/v1alpha1\nkind: Cluster\n";

/** A problem with a value an input gave, as the input's own: "input <name>: <problem> (<field>)". */
function namedByInput(p: LocatedProblem): string {
  const origin = p.place?.origin;
  return origin?.startsWith("input ") ? `${origin}: ${p.message} (${p.place!.field})` : p.text;
}

/**
 * The Cluster the inputs describe: the `cluster` input (a file path or inline YAML; absent =
 * one control plane on the runner) with the other inputs applied over it.
 */
export async function clusterFromInputs(
  inputs: ActionInputs,
  env: NodeJS.ProcessEnv,
  opts: { warn?: (message: string) => void } = {},
): Promise<{ spec: ClusterSpec; source: string }> {
  const overrides: ClusterOverrides = { ...inputs.overrides, from: { ...inputs.overrides.from } };
  if (inputs.sshPrivateKey !== undefined) {
    overrides.privateKey = inputs.sshPrivateKey;
    overrides.from!.privateKey = "input ssh-private-key";
  }
  for (const [key, value, input] of [
    ["passphrase", inputs.sshPassphrase, "ssh-private-key-passphrase"],
    ["password", inputs.sshPassword, "ssh-password"],
    ["sudoPassword", inputs.sshSudoPassword, "ssh-sudo-password"],
  ] as const) {
    if (value === undefined) continue;
    overrides[key] = value;
    overrides.from![key] = `input ${input}`;
  }
  if (inputs.kubeadmConfig !== undefined) {
    const extra = await pathOrText("kubeadm-config", inputs.kubeadmConfig, env);
    overrides.kubeadmDocuments = extra.text;
    overrides.from!.kubeadmDocuments =
      extra.source === "input kubeadm-config"
        ? extra.source
        : `input kubeadm-config (${extra.source})`;
  }
  const file =
    inputs.cluster !== undefined
      ? await pathOrText("cluster", inputs.cluster, env)
      : {
          text: DEFAULT_CLUSTER_TEXT,
          source:
            inputs.overrides.nodes !== undefined
              ? "input nodes"
              : "the default cluster (one node on the runner)",
          baseDir: workspaceOf(env),
        };
  try {
    const spec = loadClusterSpec(file.text, file.source, {
      baseDir: file.baseDir,
      home: env.HOME || homedir(),
      readFile: (p) => readInputFileSync(p, "kubeadm.configFile"),
      overrides,
      ...(opts.warn ? { warn: opts.warn } : {}),
    });
    return { spec: kubeletInputWins(spec, inputs, opts.warn), source: file.source };
  } catch (e) {
    if (e instanceof ConfigError) throw new ConfigError(e.located.map(namedByInput));
    throw e;
  }
}

/**
 * The kubelet-binary input goes to every node (action.yml: an input given wins over the Cluster
 * file): a node's own `kubeletBinary` would otherwise beat it (cluster/up/prepare.ts
 * customKubeletOf), so it is dropped, and the warning names the nodes.
 */
function kubeletInputWins(
  spec: ClusterSpec,
  inputs: ActionInputs,
  warn: ((message: string) => void) | undefined,
): ClusterSpec {
  if (inputs.overrides.kubeletBinary === undefined) return spec;
  const replaced = spec.nodes.filter(
    (n) => n.kubeletBinary !== undefined && n.kubeletBinary !== spec.kubeletBinary,
  );
  if (replaced.length > 0) {
    warn?.(
      `input kubelet-binary replaces the kubeletBinary the Cluster file gives ${replaced.map((n) => n.name).join(", ")}: every node gets ${spec.kubeletBinary}`,
    );
  }
  return {
    ...spec,
    nodes: spec.nodes.map((n) => {
      if (n.kubeletBinary === undefined) return n;
      const { kubeletBinary: _dropped, ...rest } = n;
      return rest;
    }),
  };
}

/** The local registry's state file (cluster/local-registry.ts), in the cluster's state folder. */
export function registryStateFile(stateDir: string): string {
  return join(stateDir, "registry.json");
}

/** The runner-side tunnel's pid file (cluster/tunnel.ts), in the cluster's state folder. */
export function tunnelStateFile(stateDir: string): string {
  return join(stateDir, "tunnel.json");
}
