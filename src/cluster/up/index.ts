import type { ClusterNodeSpec, ClusterSpec } from "../../config/cluster/types.js";
import { parseGoDuration } from "../../config/duration.js";
import { joinHostPort } from "../../config/network.js";
import { ConfigError } from "../../config/load.js";
import { removedAPIVersionProblems } from "../../config/validate.js";
import { releaseFor } from "../../config/versions.js";
import { resolveKubernetesVersion } from "../../node/release-version.js";
import { NodeClusterAccess } from "../../kube/access.js";
import { caPinsOf } from "../../kubeconfig/ca-pins.js";
import type { KubeClient } from "../../kube/types.js";
import { workerJoinCommandLine } from "../../manifests/join-command.js";
import { generateCertificateKey } from "../../pki/certificate-key.js";
import { generateBootstrapToken } from "../../pki/token.js";
import { fleet, hostReporter } from "../../remote/fleet.js";
import { closeHosts, type Host } from "../../remote/host.js";
import { initPhases } from "../../phases/init/index.js";
import { joinPhases } from "../../phases/join/index.js";
import type { Reporter } from "../../workflow/reporter.js";
import { Runner } from "../../workflow/runner.js";
import { parseAdminConf, serverOf, writeRunnerKubeConfig } from "./admin-kubeconfig.js";
import { endpointMismatch, networkingMismatches, versionMismatch } from "./finished-cluster.js";
import { runningNetworking } from "./running-networking.js";
import { renderInitDryRun, type RenderedInit } from "./render-init.js";
import { runnerServer, type RunnerServerInput } from "./runner-server.js";
import type { TunnelTargetSpec } from "../tunnel.js";
import { installPodNetwork } from "./pod-network.js";
import { describeInventory, inspectHost, type HostInventory } from "./inventory.js";
import {
  initDocuments,
  joinDocuments,
  userDocuments,
  type ClusterSettings,
  type JoinSecrets,
} from "./kubeadm-documents.js";
import { writeMarker, type NodeMarker } from "./node-state.js";
import {
  preflightInit,
  preflightJoin,
  prepareFirstControlPlane,
  runInit,
  runJoin,
  type NodeRun,
  type PreflightPass,
} from "./node-workflows.js";
import { ImagePulls, kubeletCgroupDriver, prepareNodes } from "./prepare.js";
import { waitForCluster } from "./readiness.js";
import { applyNodeLabels } from "./labels.js";
import { installLocalEndpoint, localEndpoint as localEndpointAddress } from "./local-endpoint.js";

// `kubeforge up`: a Cluster file becomes a working cluster (issue 5). Every host is connected
// and inspected first, pending hosts are prepared (binaries, runtime, host settings), every
// pending host passes preflight before any is initialised or joined, then init on
// the first control plane, the other control planes one at a time (kubespray's throttle: 1),
// workers in bounded parallel batches, the pod network, a readiness gate, and admin.conf on the
// runner. Hosts a previous run finished are recognised and left alone; hosts it left half-done
// are reset first; a join that fails is reset and retried once.

export interface UpRequest {
  spec: ClusterSpec;
  /** Opens the node's host (SSH or this machine); the edge decides how. */
  connect: (node: ClusterNodeSpec) => Promise<Host>;
  /** Resets a half-done host so init or join can run again (kubeforge reset --force). */
  reset: (host: Host, reporter: Reporter) => Promise<void>;
  reporter: Reporter;
  env: NodeJS.ProcessEnv;
  dryRun: boolean;
  /** Where admin.conf is written on the runner. */
  kubeconfigPath: string;
  /** Where the dry-run plan goes. */
  stdout: (text: string) => void;
  /** The runner's host names for control planes (ssh URL hosts), added to the API server SANs. */
  runnerAddresses: (node: ClusterNodeSpec) => string[];
  /**
   * Starts the runner-side tunnel (cluster/tunnel.ts) to these API server targets and returns
   * its loopback port. Without it, an API server the runner cannot reach is an error.
   */
  tunnel?: (targets: TunnelTargetSpec[]) => Promise<{ port: number }>;
  /** Where a docker control plane's API server is published on the runner (docker-nodes.ts). */
  publishedApiServer?: RunnerServerInput["publishedApiServer"];
  /**
   * Dry run: the folder on the runner where the first control plane's init is rendered
   * (render-init.ts), absent or empty. Without it a dry run prints the plan only.
   */
  renderInitDir?: (node: string) => string;
}

export interface UpNode {
  name: string;
  role: "control-plane" | "worker";
  address: string;
  /** What this run did on the node. */
  action: "init" | "join" | "none";
}

export interface UpResult {
  kubernetesVersion: string;
  apiServer: string;
  kubeconfigPath: string | undefined;
  nodes: UpNode[];
  token: string;
  caCertHash: string;
  certificateKey: string | undefined;
  /** The worker join command (with the token): a secret. */
  joinCommand: string;
  /** Phase timings per node, for summaries. */
  timings: { node: string; phase: string; ms: number }[];
  /** Dry run: the first control plane's rendered init, when there was one to render. */
  renderedInit?: RenderedInit;
}

const PLACEHOLDER_HASH = `sha256:${"0".repeat(64)}`;
const ADMIN_CONF = "/etc/kubernetes/admin.conf";
/** How long `up` tries to read a finished cluster's kubeadm-config before leaving it unchecked. */
const FINISHED_CLUSTER_READ_MS = 20_000;

type Action = "init" | "join" | "reset+init" | "reset+join" | "none";

function actionFor(inv: HostInventory, first: boolean): Action {
  const base = first ? "init" : "join";
  switch (inv.condition.kind) {
    case "done":
      return "none";
    case "partial":
      return `reset+${base}`;
    default:
      return base;
  }
}

export async function up(req: UpRequest): Promise<UpResult> {
  const { spec, reporter } = req;
  const log = (m: string) => reporter.info(`[up] ${m}`);
  const hosts = new Map<string, Host>();
  const hostOf = (name: string) => hosts.get(name)!;
  const nodeReporter = (name: string) => hostReporter(reporter, name);
  // What the Cluster file alone decides is refused before any host is contacted.
  const skip = splitSkipPhases(spec.skipPhases ?? [], reporter);
  // Pulls started by preparation; ended in `finally` when up stops before a node needs them.
  let imagePulls = new ImagePulls();
  try {
    await reporter.group("connect", () =>
      fleet(
        spec.nodes,
        (n) => n.name,
        async (node) => {
          hosts.set(node.name, await req.connect(node));
          nodeReporter(node.name).info("[connect] connected");
        },
        { concurrency: Math.max(spec.concurrency, spec.nodes.length) },
      ),
    );
    const inventory = await reporter.group("facts", () =>
      fleet(
        spec.nodes,
        (n) => n.name,
        async (node) => {
          const inv = await inspectHost(hostOf(node.name), node, spec.name);
          nodeReporter(node.name).info(`[facts] ${describeInventory(inv)}`);
          return inv;
        },
        { concurrency: Math.max(spec.concurrency, spec.nodes.length) },
      ),
    );
    const foreign = inventory.filter((i) => i.condition.kind === "foreign");
    if (foreign.length > 0) {
      throw new Error(
        `cannot use ${foreign.length} of ${inventory.length} hosts:\n${foreign
          .map(
            (i) => ` - ${i.node.name}: ${i.condition.kind === "foreign" ? i.condition.reason : ""}`,
          )
          .join("\n")}`,
      );
    }

    const controlPlanes = inventory.filter((i) => i.node.role === "control-plane");
    const workers = inventory.filter((i) => i.node.role === "worker");
    const first = controlPlanes[0]!;
    const actions = new Map(inventory.map((i) => [i.node.name, actionFor(i, i === first)]));
    if (actions.get(first.node.name) !== "none") {
      const finished = inventory.filter((i) => i !== first && actions.get(i.node.name) === "none");
      if (finished.length > 0) {
        throw new Error(
          `the first control plane ${first.node.name} has not finished init but ${finished.map((i) => i.node.name).join(", ")} already joined a cluster; run "kubeforge down" and "up" again`,
        );
      }
    }

    // One version for the whole cluster; a finished first control plane keeps its own.
    const marker = first.condition.kind === "done" ? first.condition.marker : undefined;
    const resolved = await resolveKubernetesVersion(spec.kubernetesVersion, {
      warn: (m) => reporter.warn(m),
      env: req.env,
      fetch: globalThis.fetch,
    });
    const kubernetesVersion = marker?.kubernetesVersion || resolved.version;
    // A label ("stable") names its minor only now: v1beta3 documents its kubeadm cannot read.
    const removedAPIs = removedAPIVersionProblems(
      spec.kubeadm.v1beta3Documents,
      releaseFor(kubernetesVersion),
    );
    if (removedAPIs.length > 0) throw new ConfigError(removedAPIs);
    if (marker?.kubernetesVersion) {
      const mismatch = versionMismatch(
        spec.name,
        spec.kubernetesVersion,
        marker.kubernetesVersion,
        first.node.name,
      );
      if (mismatch) throw new Error(mismatch);
      if (resolved.version !== marker.kubernetesVersion) {
        reporter.warn(
          `[up] the cluster runs ${marker.kubernetesVersion}; "up" keeps it (the Cluster file's ${spec.kubernetesVersion} is ${resolved.version} now; upgrades are not done by "up")`,
        );
      }
    }
    const multiControlPlane = controlPlanes.length > 1;
    // Several control planes without the user's endpoint: kubeforge's node-local proxies.
    const localEndpoint = multiControlPlane && !spec.controlPlaneEndpoint;
    const settings: ClusterSettings = {
      kubernetesVersion,
      ...(spec.controlPlaneEndpoint ? { controlPlaneEndpoint: spec.controlPlaneEndpoint } : {}),
      extraCertSANs: [...controlPlanes.flatMap((i) => [...req.runnerAddresses(i.node), i.address])],
      ...skip,
      ...(spec.kubeadm.patchesDir ? { patchesDir: spec.kubeadm.patchesDir } : {}),
    };
    const token = generateBootstrapToken();
    const certificateKey = multiControlPlane ? generateCertificateKey() : undefined;
    reporter.mask(token);
    if (certificateKey) reporter.mask(certificateKey);

    const user = userDocuments(spec.kubeadm.documents);
    const firstRunWith = (s: ClusterSettings): NodeRun => ({
      host: hostOf(first.node.name),
      reporter: nodeReporter(first.node.name),
      env: req.env,
      documents: initDocuments(spec, user, { ...first.node, address: first.address }, s, {
        token,
        ...(certificateKey ? { certificateKey } : {}),
      }),
    });
    let firstRun = firstRunWith(settings);
    let clusterView = await prepareFirstControlPlane(firstRun);
    clusterView.data.keys.discard();
    const bindPort = clusterView.data.cfg.init.localAPIEndpoint.bindPort;
    const proxyBackends = controlPlanes.map((i) => ({
      name: i.node.name,
      address: i.address,
      port: bindPort,
    }));
    if (localEndpoint) {
      // The API servers' bind port comes from the kubeadm documents: known only now.
      settings.controlPlaneEndpoint = localEndpointAddress(proxyBackends);
      firstRun = firstRunWith(settings);
      clusterView = await prepareFirstControlPlane(firstRun);
      clusterView.data.keys.discard();
    }
    const apiServerEndpoint =
      settings.controlPlaneEndpoint ?? joinHostPort(first.address, bindPort);
    /** The worker join command a run hands out (outputs), pinned to `pins`. */
    const joinCommandFor = (pins: readonly string[]) =>
      workerJoinCommandLine({
        program: "kubeforge",
        server: apiServerEndpoint,
        token,
        caCertHashes: pins,
      });
    if (marker) {
      const mismatch = endpointMismatch({
        cluster: spec.name,
        server: serverOf(
          parseAdminConf(await hostOf(first.node.name).readFile(ADMIN_CONF), first.node.name),
        ).href,
        wanted: apiServerEndpoint,
        bindPort,
        node: first.node.name,
        why: spec.controlPlaneEndpoint
          ? "its controlPlaneEndpoint"
          : localEndpoint
            ? `kubeforge's node-local proxy: ${controlPlanes.length} control planes and no controlPlaneEndpoint`
            : `${first.node.name}'s own address: one control plane and no controlPlaneEndpoint`,
      });
      if (mismatch) throw new Error(mismatch);
      // Nor another networking. A cluster whose API does not answer now is not checked here:
      // the readiness wait names what is wrong with it.
      const running = await new NodeClusterAccess(hostOf(first.node.name))
        .clientFor(ADMIN_CONF)
        .then((admin) => runningNetworking(admin, FINISHED_CLUSTER_READ_MS))
        .catch((e: unknown) => {
          reporter.warn(
            `[up] the networking of the finished cluster was not checked: cannot read kube-system/kubeadm-config: ${(e as Error).message.split("\n")[0]}`,
          );
          return undefined;
        });
      const problems = running
        ? networkingMismatches({
            cluster: spec.name,
            asked: spec.networking,
            running,
            node: first.node.name,
          })
        : [];
      if (problems.length > 0) throw new Error(problems.join("\n"));
    }
    const joinRun = (inv: HostInventory, secrets: JoinSecrets): NodeRun => ({
      host: hostOf(inv.node.name),
      reporter: nodeReporter(inv.node.name),
      env: req.env,
      documents: joinDocuments(user, { ...inv.node, address: inv.address }, secrets, settings),
    });

    if (req.dryRun) {
      printPlan(
        req,
        inventory,
        actions,
        firstRun.documents,
        {
          endpoint: localEndpoint
            ? `${apiServerEndpoint} (kubeforge's node-local API server proxy on every node)`
            : apiServerEndpoint,
          prepare: spec.prepare.enabled,
        },
        (inv) =>
          joinRun(inv, {
            token,
            caCertHashes: [PLACEHOLDER_HASH],
            apiServerEndpoint,
            ...(certificateKey ? { certificateKey } : {}),
          }).documents,
      );
      // A finished first control plane has no init left to render.
      const rendered =
        req.renderInitDir && actions.get(first.node.name) !== "none"
          ? await reporter.group(`render init ${first.node.name}`, () =>
              renderInitDryRun(firstRun, req.renderInitDir!(first.node.name), {
                uploadCerts: multiControlPlane,
              }),
            )
          : undefined;
      const pins = rendered?.caCertHashes ?? [PLACEHOLDER_HASH];
      return {
        kubernetesVersion,
        apiServer: `https://${apiServerEndpoint}`,
        kubeconfigPath: undefined,
        nodes: inventory.map((i) => ({
          name: i.node.name,
          role: i.node.role,
          address: i.address,
          action: "none",
        })),
        token,
        caCertHash: pins[0]!,
        certificateKey,
        // With a rendered CA, the command a real run would hand out; without, none.
        joinCommand: rendered ? joinCommandFor(pins) : "",
        timings: [],
        ...(rendered ? { renderedInit: rendered } : {}),
      };
    }

    const timings: UpResult["timings"] = [];
    const record = (node: string, result: { timings: { path: string; ms: number }[] }) => {
      for (const t of result.timings) {
        if (!t.path.includes("/")) timings.push({ node, phase: t.path, ms: t.ms });
      }
    };
    const markerFor = (inv: HostInventory, status: NodeMarker["status"]): NodeMarker => ({
      cluster: spec.name,
      node: inv.node.name,
      role: inv.node.role,
      status,
      kubernetesVersion,
    });

    // Half-done hosts are reset, then every pending host is checked, before any is changed.
    const pending = inventory.filter((i) => actions.get(i.node.name) !== "none");
    const toReset = pending.filter((i) => actions.get(i.node.name)!.startsWith("reset+"));
    if (toReset.length > 0) {
      await reporter.group("reset", () =>
        fleet(
          toReset,
          (i) => i.node.name,
          async (i) => {
            nodeReporter(i.node.name).info("[reset] a previous run did not finish here: resetting");
            await req.reset(hostOf(i.node.name), nodeReporter(i.node.name));
          },
          { concurrency: spec.concurrency },
        ),
      );
    }
    // kubeadm's preflight on every host still to init or join, before any of them changes.
    const preflightSecrets: JoinSecrets = {
      token,
      caCertHashes: [PLACEHOLDER_HASH],
      apiServerEndpoint,
      ...(certificateKey ? { certificateKey } : {}),
    };
    const preflight = (pass: PreflightPass) =>
      fleet(
        pending,
        (i) => i.node.name,
        async (i) => {
          if (i === first) {
            await preflightInit(firstRun, pass);
          } else {
            const cluster = {
              cfg: clusterView.data.cfg,
              release: clusterView.data.release,
              proxyEnv: clusterView.data.proxyEnv,
            };
            await preflightJoin(joinRun(i, preflightSecrets), cluster, pass);
          }
        },
        { concurrency: spec.concurrency },
      );
    // What preparation cannot change (a port taken, files in the way) is checked before it
    // changes anything; the rest of the checks need the prepared host, and run after.
    if (pending.length > 0 && spec.prepare.enabled) {
      await reporter.group("preflight (before preparation)", () =>
        preflight({ beforePreparation: true }),
      );
    }
    // Node preparation (binaries, container runtime, host settings, kubelet unit, images) on
    // the hosts still to init or join; finished hosts are left as they are.
    if (pending.length > 0 && spec.prepare.enabled) {
      imagePulls = await reporter.group("prepare", () =>
        prepareNodes({
          spec,
          kubernetesVersion,
          release: releaseFor(kubernetesVersion),
          nodes: pending.map((i) => ({
            node: i.node,
            host: hostOf(i.node.name),
            arch: i.facts.arch,
          })),
          cgroupDriver: kubeletCgroupDriver(spec),
          reporter: nodeReporter,
          env: req.env,
        }),
      );
    }
    if (pending.length > 0) await reporter.group("preflight", () => preflight({}));

    if (localEndpoint && pending.length > 0) {
      await reporter.group("apiserver-proxy", () =>
        installLocalEndpoint(
          inventory.map((i) => ({ name: i.node.name, host: hostOf(i.node.name) })),
          proxyBackends,
          {
            reporter: nodeReporter,
            concurrency: Math.max(spec.concurrency, inventory.length),
            allowInstall: spec.prepare.installPackages,
          },
        ),
      );
    }

    // Work on one node goes through fleet too, so that its error names the node like any other.
    const onNode = (inv: HostInventory, op: (inv: HostInventory) => Promise<void>) =>
      fleet([inv], (i) => i.node.name, op);
    const firstHost = hostOf(first.node.name);
    if (actions.get(first.node.name) !== "none") {
      await reporter.group(`init ${first.node.name}`, () =>
        onNode(first, async () => {
          await imagePulls.done(first.node.name);
          await writeMarker(firstHost, markerFor(first, "started"));
          record(first.node.name, await runInit(firstRun, { uploadCerts: multiControlPlane }));
          await writeMarker(firstHost, markerFor(first, "done"));
        }),
      );
    } else if (pending.length > 0) {
      // Nodes to join a finished cluster: a fresh token (and certificates for control planes).
      await reporter.group(`token ${first.node.name}`, () =>
        onNode(first, async () => {
          await runInit(firstRun, {
            uploadCerts: multiControlPlane,
            filterPhases: ["upload-certs", "bootstrap-token"],
          });
        }),
      );
    }

    const adminConf = parseAdminConf(await firstHost.readFile(ADMIN_CONF), first.node.name);
    const pins = caPinsOf(adminConf, `${first.node.name}:${ADMIN_CONF}`);
    const secrets: JoinSecrets = { ...preflightSecrets, caCertHashes: pins };

    const joinNode = async (inv: HostInventory) => {
      // Pulled while the control plane initialised (and earlier nodes joined).
      await imagePulls.done(inv.node.name);
      const host = hostOf(inv.node.name);
      const run = joinRun(inv, secrets);
      await writeMarker(host, markerFor(inv, "started"));
      try {
        record(inv.node.name, await runJoin(run));
      } catch (e) {
        run.reporter.warn(
          `[up] join failed: ${(e as Error).message.split("\n")[0]}; resetting the host and retrying once`,
        );
        try {
          await req.reset(host, run.reporter);
        } catch (resetError) {
          throw new Error(
            `${(e as Error).message}\n(the reset before a retry failed too: ${(resetError as Error).message})`,
            { cause: resetError },
          );
        }
        await writeMarker(host, markerFor(inv, "started"));
        record(inv.node.name, await runJoin(run));
      }
      await writeMarker(host, markerFor(inv, "done"));
    };
    for (const cp of controlPlanes.slice(1)) {
      if (actions.get(cp.node.name) === "none") continue;
      await reporter.group(`join ${cp.node.name}`, () => onNode(cp, joinNode));
    }
    const pendingWorkers = workers.filter((w) => actions.get(w.node.name) !== "none");
    if (pendingWorkers.length > 0) {
      await reporter.group("join workers", () =>
        fleet(pendingWorkers, (w) => w.node.name, joinNode, { concurrency: spec.concurrency }),
      );
    }

    const access = new NodeClusterAccess(firstHost);
    const admin: KubeClient = await access.clientFor(ADMIN_CONF);
    await reporter.group("nodes", async () => {
      await applyNodeLabels(admin, spec.nodes, log);
      await installPodNetwork(spec, admin, inventory, hostOf, log);
    });
    await reporter.group("wait", () =>
      waitForCluster(
        admin,
        spec.nodes.map((n) => n.name),
        {
          timeoutMs: parseGoDuration(spec.wait, "wait"),
          dnsDisabled: clusterView.data.cfg.cluster.dns?.disabled === true,
          podNetwork: spec.cni.type !== "none",
          log,
        },
      ),
    );

    const runnerView = await runnerServer({
      adminConf,
      controlPlanes,
      bindPort,
      localEndpoint,
      userEndpoint: spec.controlPlaneEndpoint !== undefined,
      runnerAddresses: req.runnerAddresses,
      hostOf,
      ...(req.tunnel ? { tunnel: req.tunnel } : {}),
      ...(req.publishedApiServer ? { publishedApiServer: req.publishedApiServer } : {}),
    });
    await writeRunnerKubeConfig(req.kubeconfigPath, runnerView.kubeconfig);
    log(
      `admin.conf written to ${req.kubeconfigPath} (server ${runnerView.server}${runnerView.via ? `, ${runnerView.via}` : ""})`,
    );
    const reachable = runnerView.server;

    const joined = pending.length > 0;
    return {
      kubernetesVersion,
      apiServer: reachable,
      kubeconfigPath: req.kubeconfigPath,
      nodes: inventory.map((i) => {
        const action = actions.get(i.node.name)!;
        return {
          name: i.node.name,
          role: i.node.role,
          address: i.address,
          action: action === "none" ? "none" : action.endsWith("init") ? "init" : "join",
        };
      }),
      // A run that joined nothing created no token in the cluster: none to hand out.
      token: joined ? token : "",
      caCertHash: pins[0]!,
      certificateKey: joined ? certificateKey : undefined,
      joinCommand: joined ? joinCommandFor(pins) : "",
      timings,
    };
  } finally {
    await imagePulls.cancel();
    await closeHosts(hosts.values());
  }
}

/** The Cluster's skipPhases, split into init's and join's; a name in neither is an error. */
function splitSkipPhases(skip: readonly string[], reporter: Reporter) {
  const init = new Runner(initPhases(), reporter).paths();
  const join = new Runner(joinPhases(), reporter).paths();
  const unknown = skip.filter((p) => !init.includes(p) && !join.includes(p));
  if (unknown.length > 0) {
    throw new Error(
      `skipPhases: ${unknown.map((p) => `"${p}"`).join(", ")} is neither an init nor a join phase`,
    );
  }
  return {
    initSkipPhases: skip.filter((p) => init.includes(p)),
    joinSkipPhases: skip.filter((p) => join.includes(p)),
  };
}

function printPlan(
  req: UpRequest,
  inventory: HostInventory[],
  actions: Map<string, Action>,
  initDocs: string,
  cluster: { endpoint: string; prepare: boolean },
  joinDocs: (inv: HostInventory) => string,
): void {
  const redact = (text: string) =>
    text
      .replace(/(token: )"?[a-z0-9]{6}\.[a-z0-9]{16}"?/g, "$1<generated token>")
      .replace(/(certificateKey: )"?[0-9a-f]{64}"?/g, "$1<generated certificate key>")
      .replace(/(- )"?sha256:0{64}"?/g, "$1<CA hash after init>");
  const lines = [
    `# kubeforge up --dry-run: cluster "${req.spec.name}"; nothing was changed`,
    `# API endpoint: ${cluster.endpoint}`,
    `# node preparation (binaries, container runtime, host settings, images): ${cluster.prepare ? "on every host to init or join" : "off"}`,
  ];
  for (const inv of inventory) {
    const action = actions.get(inv.node.name)!;
    lines.push(
      `# ${inv.node.name} (${inv.node.role}, ${inv.node.host}, ${inv.address}): ${action === "none" ? "finished earlier, nothing to do" : action}`,
    );
    if (action === "none") continue;
    lines.push(redact(action.endsWith("init") ? initDocs : joinDocs(inv)).trimEnd(), "---");
  }
  req.stdout(`${lines.join("\n")}\n`);
}
