import { tomlKey, tomlString, tomlStringArray, tomlTable } from "./toml.js";

// containerd's configuration for a kubelet node (pure).
//
// Config version 2: containerd 1.6 and 1.7 read it, and containerd 2.x migrates it to version 3
// in memory at start ("Daemon configurations are automatically migrated to the latest version on
// startup", containerd docs/containerd-2.0.md), so one file serves every containerd a
// distribution or a hosted runner ships. The whole file is written, not merged: hosted runners
// ship Docker's containerd config with `disabled_plugins = ["cri"]`, and a file of ours that
// does not list it leaves the CRI plugin enabled.
// Registry mirrors use the hosts directory (`config_path`), the only mechanism containerd 2.x
// keeps: the CRI plugin's `registry.mirrors` is deprecated (containerd docs/hosts.md).

export interface ContainerdSettings {
  /** The pause image of the chosen Kubernetes version (kubeadm's PauseVersion). */
  sandboxImage: string;
  /** runc's SystemdCgroup option: true when the kubelet uses the systemd cgroup driver. */
  systemdCgroup: boolean;
  /** registry host → mirror endpoints, e.g. {"docker.io": ["https://mirror.gcr.io"]} */
  registryMirrors?: Record<string, string[]>;
}

export const CONTAINERD_CONFIG_PATH = "/etc/containerd/config.toml";
/** containerd's hosts directory (docs/hosts.md uses this path). */
export const REGISTRY_HOSTS_DIR = "/etc/containerd/certs.d";
/** The first line of every file kubeforge writes for containerd: how it recognises its own. */
export const KUBEFORGE_MARKER = "# Written by kubeforge";

const CRI = "io.containerd.grpc.v1.cri";

function checkText(value: string, field: string): void {
  const control = [...value].some((c) => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f);
  if (value.trim() === "" || /\s/.test(value) || control) {
    throw new Error(`${field} must be a non-empty value without spaces or control characters`);
  }
}

/** containerd's config.toml text for the settings. */
export function containerdConfig(s: ContainerdSettings): string {
  checkText(s.sandboxImage, "the container runtime's sandboxImage");
  if (typeof s.systemdCgroup !== "boolean") {
    throw new Error("the container runtime's systemdCgroup must be true or false");
  }
  const runc = [CRI, "containerd", "runtimes", "runc"];
  const lines = [
    `${KUBEFORGE_MARKER}: containerd with its CRI plugin for the kubelet. Changes are replaced.`,
    "# Config version 2: containerd 1.6/1.7 read it; containerd 2.x migrates it at start.",
    "version = 2",
    // Docker's packaged config disables the CRI plugin; this file enables every plugin.
    "disabled_plugins = []",
    "",
    "[plugins]",
    `  [${tomlTable("plugins", CRI)}]`,
    `    sandbox_image = ${tomlString(s.sandboxImage)}`,
    `    [${tomlTable("plugins", CRI, "containerd")}]`,
    `      default_runtime_name = "runc"`,
    `      [${tomlTable("plugins", ...runc)}]`,
    `        runtime_type = "io.containerd.runc.v2"`,
    `        [${tomlTable("plugins", ...runc, "options")}]`,
    // The kubelet and the runtime must agree on the cgroup driver (kubeadm docs,
    // "Configuring a cgroup driver").
    `          SystemdCgroup = ${s.systemdCgroup ? "true" : "false"}`,
    `    [${tomlTable("plugins", CRI, "registry")}]`,
    `      config_path = ${tomlString(REGISTRY_HOSTS_DIR)}`,
    "",
  ];
  return lines.join("\n");
}

/** A registry host namespace as containerd names its folder: host[:port], or `_default`. */
function checkRegistry(registry: string): void {
  const hostPort =
    /^[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*(:\d{1,5})?$/;
  if (registry !== "_default" && !hostPort.test(registry)) {
    throw new Error(
      `registry mirror key "${registry}" must be a registry host (e.g. docker.io or registry.local:5000) or _default`,
    );
  }
}

function checkEndpoint(registry: string, endpoint: string): void {
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    throw new Error(`registry mirror "${endpoint}" for ${registry} is not a URL`);
  }
  if ((url.protocol !== "https:" && url.protocol !== "http:") || url.hostname === "") {
    throw new Error(
      `registry mirror "${endpoint}" for ${registry} must be an http:// or https:// URL`,
    );
  }
  if (url.search !== "" || url.hash !== "" || url.username !== "" || url.password !== "") {
    throw new Error(
      `registry mirror "${endpoint}" for ${registry} must not carry credentials, a query or a fragment`,
    );
  }
}

/**
 * One hosts.toml per registry (containerd docs/hosts.md): each mirror is tried in order with the
 * pull and resolve capabilities, then the registry itself. `server` is left out so that containerd
 * falls back to the registry's own default host (registry-1.docker.io for docker.io).
 * Resolve is granted because tag lookups are what registry rate limits count: a mirror that may
 * only pull blobs would not spare them.
 */
export function registryHostsFiles(
  mirrors: Record<string, string[]>,
): { path: string; content: string }[] {
  return Object.keys(mirrors)
    .sort()
    .map((registry) => {
      checkRegistry(registry);
      const endpoints = mirrors[registry];
      if (!Array.isArray(endpoints) || endpoints.length === 0) {
        throw new Error(`registry mirrors for ${registry} must list at least one URL`);
      }
      const lines = [
        `${KUBEFORGE_MARKER}: mirrors for ${registry}, tried in order before the registry itself.`,
      ];
      for (const endpoint of endpoints) {
        checkEndpoint(registry, endpoint);
        lines.push(
          "",
          `[${tomlKey("host")}.${tomlString(endpoint)}]`,
          `  capabilities = ${tomlStringArray(["pull", "resolve"])}`,
        );
      }
      return {
        path: `${REGISTRY_HOSTS_DIR}/${registry}/hosts.toml`,
        content: `${lines.join("\n")}\n`,
      };
    });
}

/**
 * The hosts.toml that sends pulls of `registry` (the name images carry, "localhost:5001") to the
 * local registry at `server` (plain HTTP, "http://kubeforge-registry:5000"), as kind's "Local
 * Registry" recipe writes it for its nodes. `server` replaces the registry's own address, so a
 * node never tries its own localhost.
 */
export function localRegistryHostsFile(
  registry: string,
  server: string,
): { path: string; content: string } {
  checkRegistry(registry);
  checkEndpoint(registry, server);
  if (!server.startsWith("http://")) {
    throw new Error(`the local registry's address ${server} must be an http:// URL`);
  }
  const lines = [
    `${KUBEFORGE_MARKER}: the local registry ${registry}, served over plain HTTP by the runner.`,
    `server = ${tomlString(server)}`,
    "",
    `[${tomlKey("host")}.${tomlString(server)}]`,
    `  capabilities = ${tomlStringArray(["pull", "resolve"])}`,
  ];
  return { path: `${REGISTRY_HOSTS_DIR}/${registry}/hosts.toml`, content: `${lines.join("\n")}\n` };
}
