import { CommandError, type Host } from "../remote/host.js";
import { lookPath } from "./lookpath.js";
import { writeIfChanged } from "./runtime/files.js";

// The kubelet's systemd unit and kubeadm's drop-in, as the Kubernetes packages ship them
// (kubernetes/release cmd/krel/templates/latest/kubelet/kubelet.service and
// cmd/krel/templates/latest/kubeadm/10-kubeadm.conf, the files kubeadm's install docs fetch for
// "Without a package manager" at release tag v0.16.2), with /usr/bin/kubelet replaced by the
// kubelet's path as the docs' `sed "s:/usr/bin:${DOWNLOAD_DIR}:g"` does.
// The drop-in reads /etc/sysconfig/kubelet as the template does (the deb build rewrites it to
// /etc/default/kubelet, kubernetes/release#3279; the docs' recipe keeps the template's path).
//
// Location: /etc/systemd/system, not the /usr/lib/systemd/system of the current docs: /etc is
// where an administrator's units go and outranks the package directory, so a distribution
// kubelet package's unit and 10-kubeadm.conf cannot shadow ours; /usr is read-only on some
// distributions (Flatcar, which the same docs call out); and the docs' earlier recipe used /etc.

export const KUBELET_UNIT_PATH = "/etc/systemd/system/kubelet.service";
export const KUBEADM_DROP_IN_PATH = "/etc/systemd/system/kubelet.service.d/10-kubeadm.conf";

const TEMPLATE_KUBELET = "/usr/bin/kubelet";

const KUBELET_SERVICE_TEMPLATE = `[Unit]
Description=kubelet: The Kubernetes Node Agent
Documentation=https://kubernetes.io/docs/
Wants=network-online.target
After=network-online.target

[Service]
ExecStart=/usr/bin/kubelet
Restart=always
StartLimitInterval=0
RestartSec=10

[Install]
WantedBy=multi-user.target
`;

const KUBEADM_DROP_IN_TEMPLATE = `# Note: This dropin only works with kubeadm and kubelet v1.11+
[Service]
Environment="KUBELET_KUBECONFIG_ARGS=--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf --kubeconfig=/etc/kubernetes/kubelet.conf"
Environment="KUBELET_CONFIG_ARGS=--config=/var/lib/kubelet/config.yaml"
# This is a file that "kubeadm init" and "kubeadm join" generates at runtime, populating the KUBELET_KUBEADM_ARGS variable dynamically
EnvironmentFile=-/var/lib/kubelet/kubeadm-flags.env
# This is a file that the user can use for overrides of the kubelet args as a last resort. Preferably, the user should use
# the .NodeRegistration.KubeletExtraArgs object in the configuration files instead. KUBELET_EXTRA_ARGS should be sourced from this file.
EnvironmentFile=-/etc/sysconfig/kubelet
ExecStart=
ExecStart=/usr/bin/kubelet $KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS $KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS
`;

/**
 * An absolute path systemd takes literally in ExecStart: no spaces, quotes, `$` (variable
 * expansion), `%` (specifiers) or `\` (escapes).
 */
function checkKubeletPath(path: string): void {
  if (!/^\/[A-Za-z0-9._+\-/]+$/.test(path) || path.endsWith("/")) {
    throw new Error(
      `kubelet path "${path}" must be an absolute file path of letters, digits and . _ + - / only`,
    );
  }
}

function substitute(template: string, kubeletPath: string): string {
  checkKubeletPath(kubeletPath);
  return template.split(TEMPLATE_KUBELET).join(kubeletPath);
}

/** kubelet.service with the kubelet at `kubeletPath`. */
export function kubeletServiceUnit(kubeletPath: string): string {
  return substitute(KUBELET_SERVICE_TEMPLATE, kubeletPath);
}

/** kubeadm's 10-kubeadm.conf drop-in with the kubelet at `kubeletPath`. */
export function kubeadmDropIn(kubeletPath: string): string {
  return substitute(KUBEADM_DROP_IN_TEMPLATE, kubeletPath);
}

async function systemctl(host: Host, args: string[], what: string) {
  const argv = ["systemctl", ...args];
  const r = await host.exec(argv, { sudo: true, timeoutMs: 60_000 });
  if (r.code !== 0) throw new Error(`${what}: ${new CommandError(host.name, argv, r).message}`);
}

/**
 * Writes the unit and the drop-in when they differ, then `systemctl daemon-reload` and
 * `systemctl enable kubelet` (not start: kubeadm's kubelet-start phase starts it once its
 * configuration exists). Enables a disabled kubelet even when the files were in place.
 */
export async function installKubeletService(
  host: Host,
  opts: { kubeletPath: string; log?: (line: string) => void },
): Promise<{ changed: boolean }> {
  const log = opts.log ?? (() => undefined);
  const unit = kubeletServiceUnit(opts.kubeletPath);
  const dropIn = kubeadmDropIn(opts.kubeletPath);
  // Run by name, as kubeadm's init system helper does; the lookup only proves systemd is there.
  if ((await lookPath(host, "systemctl")) === undefined) {
    throw new Error(
      `${host.name}: the kubelet service needs systemd, and systemctl is not on the PATH`,
    );
  }
  let filesChanged = false;
  for (const [path, content] of [
    [KUBELET_UNIT_PATH, unit],
    [KUBEADM_DROP_IN_PATH, dropIn],
  ] as const) {
    if (await writeIfChanged(host, path, content, { mode: 0o644 })) {
      log(`wrote ${path}`);
      filesChanged = true;
    }
  }
  if (filesChanged) {
    await systemctl(host, ["daemon-reload"], "failed to reload systemd");
    await systemctl(host, ["enable", "kubelet"], "failed to enable kubelet");
    log("enabled kubelet.service");
    return { changed: true };
  }
  const enabled = await host.exec(["systemctl", "is-enabled", "kubelet"], {
    sudo: true,
    readOnly: true,
    timeoutMs: 30_000,
  });
  if (enabled.code === 0 && enabled.stdout.trim() === "enabled") {
    log("kubelet service already installed");
    return { changed: false };
  }
  await systemctl(host, ["enable", "kubelet"], "failed to enable kubelet");
  log("enabled kubelet.service");
  return { changed: true };
}
