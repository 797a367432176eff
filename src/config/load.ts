import {
  convertClusterConfigurationV1beta3,
  convertInitConfigurationV1beta3,
  convertJoinConfigurationV1beta3,
} from "./convert-v1beta3.js";
import { formatGoDurationNanos, tryParseGoDurationNanos } from "./duration.js";
import type { ComponentConfig, ConfigDocuments } from "./types.js";
import {
  KUBEADM_GROUP,
  KUBEADM_V1BETA3,
  KUBEADM_V1BETA4,
  KUBELET_CONFIG_API,
  KUBE_PROXY_CONFIG_API,
} from "./types.js";
import { pinnedRelease } from "./versions.js";
import { parseYAMLDocumentsWithText } from "./yaml.js";
import { childPath, describeDocument, describeValue, isMapping } from "./values.js";

// Reading a `--config` file: a multi-document YAML stream, each document routed by apiVersion
// and kind (kubeadm: util/config/common.go SplitConfigDocuments, initconfiguration.go
// documentMapToInitConfiguration), kubeadm's types decoded strictly.
//
// Strictness. kubeadm decodes with sigs.k8s.io/yaml and then re-checks each document with
// util/config/strict VerifyUnmarshalStrict. `kubeadm init/join` only print that check's result
// as a warning (documentMapToInitConfiguration is called with strictErrors=false), while
// `kubeadm config validate` turns it into an error. kubeforge refuses unknown and duplicate
// fields always: a typo such as `podSubent` would otherwise build a cluster without the
// setting the user asked for. Type errors are errors in kubeadm too.

/** A config file that cannot be used; `problems` holds one sentence per problem. */
/** Where a problem is, as data: the file or input, the field, and where its value came from. */
export interface ProblemPlace {
  /** The file or input the field was read from ("cluster.yaml"). */
  source: string;
  /** The field's path ("networking.podSubnet"). */
  field: string;
  /** Where the value came from when not the file: an action input ("input pod-network-cidr"). */
  origin?: string;
}

/** A problem with its place, when the place is known. */
export interface LocatedProblem {
  /** The whole sentence, as `problems` holds it. */
  text: string;
  /** The sentence after the place: what is wrong. */
  message: string;
  place?: ProblemPlace;
}

export class ConfigError extends Error {
  /** The problems with their places: those it knows, in `problems`' order. */
  readonly located: LocatedProblem[];

  constructor(
    readonly problems: string[],
    located: readonly LocatedProblem[] = [],
  ) {
    super(problems.join("\n"));
    this.name = "ConfigError";
    this.located = problems.map(
      (text) => located.find((l) => l.text === text) ?? { text, message: text },
    );
  }
}

// ---- a small schema language for kubeadm's types ------------------------------------------

type Field =
  | { t: "string" }
  | { t: "bool" }
  | { t: "int"; min: number; max: number }
  | { t: "duration" }
  | { t: "list"; of: Field }
  | { t: "map"; of: Field }
  | { t: "object"; fields: Record<string, Field> }
  | { t: "any" };

const STR: Field = { t: "string" };
const BOOL: Field = { t: "bool" };
const INT32: Field = { t: "int", min: -(2 ** 31), max: 2 ** 31 - 1 };
const DURATION: Field = { t: "duration" };
const ANY: Field = { t: "any" };
const list = (of: Field): Field => ({ t: "list", of });
const map = (of: Field): Field => ({ t: "map", of });
const obj = (fields: Record<string, Field>): Field => ({ t: "object", fields });

// ---- kubeadm.k8s.io/v1beta4 (apis/kubeadm/v1beta4/types.go) ---------------------------------

const ARG = obj({ name: STR, value: STR });
const ENV_VAR = obj({ name: STR, value: STR, valueFrom: ANY });
const HOST_PATH_MOUNT = obj({
  name: STR,
  hostPath: STR,
  mountPath: STR,
  readOnly: BOOL,
  pathType: STR,
});
const CONTROL_PLANE_COMPONENT = {
  extraArgs: list(ARG),
  extraVolumes: list(HOST_PATH_MOUNT),
  extraEnvs: list(ENV_VAR),
};
const IMAGE_META = { imageRepository: STR, imageTag: STR };
const API_ENDPOINT = obj({ advertiseAddress: STR, bindPort: INT32 });
const TAINT = obj({ key: STR, value: STR, effect: STR, timeAdded: STR });
const NODE_REGISTRATION = obj({
  name: STR,
  criSocket: STR,
  taints: list(TAINT),
  kubeletExtraArgs: list(ARG),
  ignorePreflightErrors: list(STR),
  imagePullPolicy: STR,
  imagePullSerial: BOOL,
});
const BOOTSTRAP_TOKEN = obj({
  token: STR,
  description: STR,
  ttl: DURATION,
  expires: STR,
  usages: list(STR),
  groups: list(STR),
});
const PATCHES = obj({ directory: STR });
const TIMEOUTS = obj({
  controlPlaneComponentHealthCheck: DURATION,
  kubeletHealthCheck: DURATION,
  kubernetesAPICall: DURATION,
  etcdAPICall: DURATION,
  tlsBootstrap: DURATION,
  discovery: DURATION,
  upgradeManifests: DURATION,
});
const NETWORKING = obj({ serviceSubnet: STR, podSubnet: STR, dnsDomain: STR });
const EXTERNAL_ETCD = obj({ endpoints: list(STR), caFile: STR, certFile: STR, keyFile: STR });
const TYPE_META = { apiVersion: STR, kind: STR };
const DISCOVERY_FIELDS = {
  bootstrapToken: obj({
    token: STR,
    apiServerEndpoint: STR,
    caCertHashes: list(STR),
    unsafeSkipCAVerification: BOOL,
  }),
  file: obj({ kubeConfigPath: STR }),
  tlsBootstrapToken: STR,
};
const JOIN_CONTROL_PLANE = obj({ localAPIEndpoint: API_ENDPOINT, certificateKey: STR });

const V1BETA4: Record<string, Field> = {
  InitConfiguration: obj({
    ...TYPE_META,
    bootstrapTokens: list(BOOTSTRAP_TOKEN),
    dryRun: BOOL,
    nodeRegistration: NODE_REGISTRATION,
    localAPIEndpoint: API_ENDPOINT,
    certificateKey: STR,
    skipPhases: list(STR),
    patches: PATCHES,
    timeouts: TIMEOUTS,
  }),
  ClusterConfiguration: obj({
    ...TYPE_META,
    etcd: obj({
      local: obj({
        ...IMAGE_META,
        dataDir: STR,
        extraArgs: list(ARG),
        extraEnvs: list(ENV_VAR),
        serverCertSANs: list(STR),
        peerCertSANs: list(STR),
      }),
      external: EXTERNAL_ETCD,
    }),
    networking: NETWORKING,
    kubernetesVersion: STR,
    controlPlaneEndpoint: STR,
    apiServer: obj({ ...CONTROL_PLANE_COMPONENT, certSANs: list(STR) }),
    controllerManager: obj(CONTROL_PLANE_COMPONENT),
    scheduler: obj(CONTROL_PLANE_COMPONENT),
    dns: obj({ ...IMAGE_META, disabled: BOOL }),
    proxy: obj({ disabled: BOOL }),
    certificatesDir: STR,
    imageRepository: STR,
    featureGates: map(BOOL),
    clusterName: STR,
    encryptionAlgorithm: STR,
    certificateValidityPeriod: DURATION,
    caCertificateValidityPeriod: DURATION,
  }),
  UpgradeConfiguration: obj({
    ...TYPE_META,
    apply: obj({
      kubernetesVersion: STR,
      allowExperimentalUpgrades: BOOL,
      allowRCUpgrades: BOOL,
      certificateRenewal: BOOL,
      dryRun: BOOL,
      etcdUpgrade: BOOL,
      forceUpgrade: BOOL,
      ignorePreflightErrors: list(STR),
      patches: PATCHES,
      printConfig: BOOL,
      skipPhases: list(STR),
      imagePullPolicy: STR,
      imagePullSerial: BOOL,
    }),
    node: obj({
      certificateRenewal: BOOL,
      dryRun: BOOL,
      etcdUpgrade: BOOL,
      ignorePreflightErrors: list(STR),
      skipPhases: list(STR),
      patches: PATCHES,
      imagePullPolicy: STR,
      imagePullSerial: BOOL,
    }),
    plan: obj({
      kubernetesVersion: STR,
      allowExperimentalUpgrades: BOOL,
      allowRCUpgrades: BOOL,
      dryRun: BOOL,
      ignorePreflightErrors: list(STR),
      printConfig: BOOL,
    }),
    diff: obj({ kubernetesVersion: STR, contextLines: INT32 }),
    timeouts: TIMEOUTS,
  }),
  JoinConfiguration: obj({
    ...TYPE_META,
    dryRun: BOOL,
    nodeRegistration: NODE_REGISTRATION,
    caCertPath: STR,
    discovery: obj(DISCOVERY_FIELDS),
    controlPlane: JOIN_CONTROL_PLANE,
    skipPhases: list(STR),
    patches: PATCHES,
    timeouts: TIMEOUTS,
  }),
};

// ---- kubeadm.k8s.io/v1beta3 (apis/kubeadm/v1beta3/types.go) ---------------------------------

const CONTROL_PLANE_COMPONENT_V1BETA3 = {
  extraArgs: map(STR),
  extraVolumes: list(HOST_PATH_MOUNT),
};
const NODE_REGISTRATION_V1BETA3 = obj({
  name: STR,
  criSocket: STR,
  taints: list(TAINT),
  kubeletExtraArgs: map(STR),
  ignorePreflightErrors: list(STR),
  imagePullPolicy: STR,
});

const V1BETA3: Record<string, Field> = {
  InitConfiguration: obj({
    ...TYPE_META,
    bootstrapTokens: list(BOOTSTRAP_TOKEN),
    nodeRegistration: NODE_REGISTRATION_V1BETA3,
    localAPIEndpoint: API_ENDPOINT,
    certificateKey: STR,
    skipPhases: list(STR),
    patches: PATCHES,
  }),
  ClusterConfiguration: obj({
    ...TYPE_META,
    etcd: obj({
      local: obj({
        ...IMAGE_META,
        dataDir: STR,
        extraArgs: map(STR),
        serverCertSANs: list(STR),
        peerCertSANs: list(STR),
      }),
      external: EXTERNAL_ETCD,
    }),
    networking: NETWORKING,
    kubernetesVersion: STR,
    controlPlaneEndpoint: STR,
    apiServer: obj({
      ...CONTROL_PLANE_COMPONENT_V1BETA3,
      certSANs: list(STR),
      timeoutForControlPlane: DURATION,
    }),
    controllerManager: obj(CONTROL_PLANE_COMPONENT_V1BETA3),
    scheduler: obj(CONTROL_PLANE_COMPONENT_V1BETA3),
    dns: obj(IMAGE_META),
    certificatesDir: STR,
    imageRepository: STR,
    featureGates: map(BOOL),
    clusterName: STR,
  }),
  JoinConfiguration: obj({
    ...TYPE_META,
    nodeRegistration: NODE_REGISTRATION_V1BETA3,
    caCertPath: STR,
    discovery: obj({ ...DISCOVERY_FIELDS, timeout: DURATION }),
    controlPlane: JOIN_CONTROL_PLANE,
    skipPhases: list(STR),
    patches: PATCHES,
  }),
};

/**
 * Kinds kubeadm knows (v1beta4 only) that `init`/`join` do not read. UpgradeConfiguration is
 * decoded all the same (strictly, into ConfigDocuments.upgrade) for `upgrade`, which reads it.
 */
const IGNORED_KINDS = new Set(["ResetConfiguration", "UpgradeConfiguration"]);

// ---- decoding --------------------------------------------------------------------------------

/** Go's zero value for a null list item (encoding/json leaves it zero, no error). */
function zeroValue(field: Field): unknown {
  switch (field.t) {
    case "string":
      return "";
    case "bool":
      return false;
    case "int":
      return 0;
    case "duration":
      return "0s";
    case "list":
      return [];
    default:
      return {};
  }
}

/** The child of a failsafe-parsed value (see parseYAMLDocumentsWithText), when it has one. */
function rawChild(raw: unknown, key: string | number): unknown {
  if (typeof key === "number") return Array.isArray(raw) ? raw[key] : undefined;
  return isMapping(raw) ? raw[key] : undefined;
}

/**
 * A boolean or number where kubeadm's type has a string. kubeadm decodes its documents with the
 * API machinery's universal decoder, whose YAML serializer converts YAML to JSON without the
 * target type (apimachinery runtime/serializer/json Decode: yaml.YAMLToJSON(data)), so `yes`
 * stays a JSON true and `0644` the number 420, and encoding/json then fails: "json: cannot
 * unmarshal bool into Go struct field ... of type string" (kubeadm's documentMapToInitConfiguration
 * and kubernetes/website#15171, where `extraArgs` with an unquoted boolean stopped kubeadm init).
 */
function unquotedScalarProblem(value: number | boolean, raw: unknown, path: string): string {
  const written = typeof raw === "string" ? raw : String(value);
  const read =
    typeof value === "boolean"
      ? `the boolean ${value}`
      : written === String(value)
        ? "a number"
        : `the number ${value}`;
  return `field "${path}" must be a string, but ${written} is read as ${read} by Kubernetes' YAML rules; quote it: "${written}"`;
}

/**
 * Decodes `value` against `field`, collecting problems as "<path> ..." fragments. A null field
 * is absent, as encoding/json leaves it at its zero value. `raw` is the same value with its
 * scalars as written, for messages.
 */
function decodeField(
  value: unknown,
  field: Field,
  path: string,
  problems: string[],
  raw?: unknown,
): unknown {
  if (value === null || value === undefined) return undefined;
  const typeError = (expected: string) => {
    problems.push(`field "${path}" must be ${expected}, got ${describeValue(value)}`);
    return undefined;
  };
  switch (field.t) {
    case "any":
      return value;
    case "string":
      if (typeof value === "string") return value;
      if (typeof value === "number" || typeof value === "boolean") {
        problems.push(unquotedScalarProblem(value, raw, path));
        return undefined;
      }
      return typeError("a string");
    case "bool":
      return typeof value === "boolean" ? value : typeError("true or false");
    case "int":
      if (typeof value !== "number" || !Number.isInteger(value)) return typeError("an integer");
      if (value < field.min || value > field.max) return typeError("an integer in 32-bit range");
      return value;
    case "duration": {
      // metav1.Duration decodes only from a string, through time.ParseDuration.
      if (typeof value !== "string") return typeError('a duration string such as "24h0m0s"');
      const nanos = tryParseGoDurationNanos(value);
      if (nanos === undefined) {
        problems.push(
          `field "${path}": "${value}" is not a valid duration (examples: "24h0m0s", "90s")`,
        );
        return undefined;
      }
      return formatGoDurationNanos(nanos);
    }
    case "list":
      if (!Array.isArray(value)) return typeError("a list");
      return value.map((item, i) =>
        item === null
          ? zeroValue(field.of)
          : decodeField(item, field.of, childPath(path, i), problems, rawChild(raw, i)),
      );
    case "map": {
      if (!isMapping(value)) return typeError("a mapping");
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(value)) {
        const decoded = decodeField(v, field.of, childPath(path, k), problems, rawChild(raw, k));
        if (decoded !== undefined) out[k] = decoded;
      }
      return out;
    }
    case "object": {
      if (!isMapping(value)) return typeError("a mapping");
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(value)) {
        const sub = field.fields[k];
        if (!sub) {
          problems.push(`unknown field "${childPath(path, k)}"`);
          continue;
        }
        const decoded = decodeField(v, sub, childPath(path, k), problems, rawChild(raw, k));
        if (decoded !== undefined) out[k] = decoded;
      }
      return out;
    }
  }
}

interface RawDocument {
  index: number;
  apiVersion: string;
  kind: string;
  body: Record<string, unknown>;
  /** The body with every scalar as written (for messages). */
  text: unknown;
}

function splitDocuments(text: string, source: string, problems: string[]): RawDocument[] {
  const docs = parseYAMLDocumentsWithText(text, source);
  if (docs.length === 0) problems.push(`${source}: the file holds no YAML document`);
  const out: RawDocument[] = [];
  docs.forEach(({ value: doc, raw }, i) => {
    const where = `${source}: document ${i + 1}`;
    if (!isMapping(doc)) {
      problems.push(`${where} is ${describeDocument(doc)}, not a mapping with apiVersion and kind`);
      return;
    }
    const { apiVersion, kind } = doc;
    const missing = [
      typeof apiVersion === "string" && apiVersion !== "" ? undefined : "apiVersion",
      typeof kind === "string" && kind !== "" ? undefined : "kind",
    ].filter((m): m is string => m !== undefined);
    if (missing.length > 0) {
      // kubeadm: "kind and apiVersion is mandatory information that must be specified".
      problems.push(
        `${where} has no ${missing.join(" and no ")}; every document needs apiVersion and kind`,
      );
      return;
    }
    out.push({
      index: i + 1,
      apiVersion: apiVersion as string,
      kind: kind as string,
      body: doc,
      text: raw,
    });
  });
  return out;
}

function decodeKubeadm(
  doc: RawDocument,
  schema: Field,
  source: string,
  problems: string[],
): Record<string, unknown> {
  const fieldProblems: string[] = [];
  const decoded = decodeField(doc.body, schema, "", fieldProblems, doc.text) as Record<
    string,
    unknown
  >;
  for (const p of fieldProblems) problems.push(`${source}: ${doc.kind}: ${p}`);
  const { apiVersion: _a, kind: _k, ...rest } = decoded;
  return rest;
}

/**
 * Decodes every document of a `--config` file (v1beta3 documents are converted to the v1beta4
 * form). Throws a ConfigError listing every problem, each one sentence naming the file, the
 * kind and the field.
 */
export function decodeConfigDocuments(text: string, source: string): ConfigDocuments {
  const problems: string[] = [];
  const raw = splitDocuments(text, source, problems);
  const result: ConfigDocuments = { ignoredKinds: [], source };
  const warnings: string[] = [];
  const v1beta3Documents: string[] = [];
  const seen = new Map<string, string>();
  let timeoutForControlPlane: string | undefined;
  let v1beta3Init: Record<string, unknown> | undefined;

  for (const doc of raw) {
    const { apiVersion, kind } = doc;
    const group = apiVersion.includes("/") ? apiVersion.slice(0, apiVersion.indexOf("/")) : "";
    const previous = seen.get(kind);
    if (previous !== undefined) {
      // kubeadm: "invalid configuration: kind %q is specified twice in YAML file".
      problems.push(
        `${source}: kind ${kind} appears more than once (documents ${previous} and ${doc.index})`,
      );
      continue;
    }
    seen.set(kind, String(doc.index));

    if (group === KUBEADM_GROUP) {
      if (apiVersion === KUBEADM_V1BETA4 && IGNORED_KINDS.has(kind)) {
        result.ignoredKinds.push(kind);
        if (kind === "UpgradeConfiguration") {
          result.upgrade = decodeKubeadm(doc, V1BETA4[kind]!, source, problems);
        }
        continue;
      }
      const schema =
        apiVersion === KUBEADM_V1BETA4
          ? V1BETA4[kind]
          : apiVersion === KUBEADM_V1BETA3
            ? V1BETA3[kind]
            : undefined;
      if (apiVersion !== KUBEADM_V1BETA4 && apiVersion !== KUBEADM_V1BETA3) {
        problems.push(
          `${source}: apiVersion "${apiVersion}" (kind "${kind}") is not supported; use ${KUBEADM_V1BETA4} (${KUBEADM_V1BETA3} is still read); "kubeadm config migrate" converts older files`,
        );
        continue;
      }
      if (!schema) {
        problems.push(`${source}: unknown kind "${kind}" for apiVersion "${apiVersion}"`);
        continue;
      }
      const body = decodeKubeadm(doc, schema, source, problems);
      if (apiVersion === KUBEADM_V1BETA3) {
        v1beta3Documents.push(`${source}: ${kind}`);
        // kubeadm: util/config ValidateSupportedVersion warns about deprecated API versions
        // (once per document, as kubeadm); versions without v1beta3 are refused in validation.
        warnings.push(
          `${source}: ${kind} uses the deprecated API version ${KUBEADM_V1BETA3}; "kubeadm config migrate" writes it as ${KUBEADM_V1BETA4}`,
        );
        if (kind === "InitConfiguration") v1beta3Init = body;
        else if (kind === "ClusterConfiguration") {
          const converted = convertClusterConfigurationV1beta3(body);
          result.cluster = converted.cluster;
          timeoutForControlPlane = converted.timeoutForControlPlane;
        } else result.join = convertJoinConfigurationV1beta3(body);
        continue;
      }
      if (kind === "InitConfiguration") result.init = body;
      else if (kind === "ClusterConfiguration") result.cluster = body;
      else result.join = body;
      continue;
    }

    if (kind === "KubeletConfiguration" || kind === "KubeProxyConfiguration") {
      const expected = kind === "KubeletConfiguration" ? KUBELET_CONFIG_API : KUBE_PROXY_CONFIG_API;
      if (apiVersion !== expected) {
        problems.push(`${source}: ${kind} must have apiVersion "${expected}", not "${apiVersion}"`);
        continue;
      }
      // Component configs belong to their components; kubeadm only defaults a few fields, so
      // they are kept as given (a deep copy, without YAML-only values). Fields their Go types
      // lack are found later, against the release's types (componentConfigUnknownFields):
      // kubeadm init and join only warn about them, config validate refuses them.
      const config = JSON.parse(JSON.stringify(doc.body)) as ComponentConfig;
      if (kind === "KubeletConfiguration") result.kubelet = config;
      else result.kubeProxy = config;
      continue;
    }

    problems.push(
      `${source}: unknown document with apiVersion "${apiVersion}" and kind "${kind}"; a config file holds kubeadm.k8s.io InitConfiguration, ClusterConfiguration or JoinConfiguration, KubeletConfiguration and KubeProxyConfiguration`,
    );
  }

  if (v1beta3Init !== undefined) {
    result.init = convertInitConfigurationV1beta3(v1beta3Init, timeoutForControlPlane);
  } else if (timeoutForControlPlane !== undefined) {
    // The v1beta3 ClusterConfiguration carried the only timeout: keep it for init.
    result.init = { timeouts: { controlPlaneComponentHealthCheck: timeoutForControlPlane } };
  }
  if (problems.length > 0) throw new ConfigError(problems);
  if (v1beta3Documents.length > 0) {
    result.v1beta3Documents = v1beta3Documents;
    // A file pinning a version whose kubeadm no longer reads v1beta3 gets validation's error
    // for each document, not first a deprecation warning for something that is refused.
    const pinned = pinnedRelease(result.cluster?.kubernetesVersion ?? "");
    if (pinned && !pinned.behaviour.kubeadmAPIV1beta3) {
      warnings.splice(0, warnings.length, ...warnings.filter((w) => !w.includes(KUBEADM_V1BETA3)));
    }
  }
  if (warnings.length > 0) result.warnings = warnings;
  return result;
}
