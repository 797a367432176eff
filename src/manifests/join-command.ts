// show-join-command (kubeadm: cmd/phases/init/showjoincommand.go initDoneTempl, and
// cmd/util/join.go joinCommandTemplate): the message printed at the end of init, once per
// bootstrap token, with kubeadm's wording and layout. `program` replaces "kubeadm" in the
// commands ("kubeforge").

/** What kubeadm prints instead of the token or certificate key when told to skip them. */
export const WITHHELD = "<value withheld>";

export interface JoinCommandOptions {
  /** The command printed: "kubeforge" prints "kubeforge join ...". */
  program: string;
  /** admin.conf's server URL; kubeadm strips "https://" from it. */
  server: string;
  token: string;
  /** Pins of every CA in admin.conf's certificate-authority-data ("sha256:<hex>"). */
  caCertHashes: readonly string[];
  controlPlane: boolean;
  /** Printed with --control-plane when set (upload-certs). */
  certificateKey?: string;
  skipTokenPrint?: boolean;
  skipCertificateKeyPrint?: boolean;
}

// join.go renders through html/template, so values in text context are HTML-escaped; the
// "withheld" placeholder is passed as template.HTML and printed as is.
function htmlEscape(text: string): string {
  return text.replace(/[\0"&'+<>]/g, (c) => {
    switch (c) {
      case "\0":
        return "\uFFFD";
      case '"':
        return "&#34;";
      case "&":
        return "&amp;";
      case "'":
        return "&#39;";
      case "+":
        return "&#43;";
      case "<":
        return "&lt;";
      default:
        return "&gt;";
    }
  });
}

/**
 * One join command, laid out as kubeadm's template: a backslash-newline-tab before the pins and
 * before --control-plane, a space after every pin (so a worker command ends with a space).
 * With skipCertificateKeyPrint the placeholder is printed even without a key, as kubeadm does.
 */
export function joinCommand(o: JoinCommandOptions): string {
  const token = o.skipTokenPrint ? WITHHELD : htmlEscape(o.token);
  const key = o.skipCertificateKeyPrint ? WITHHELD : htmlEscape(o.certificateKey ?? "");
  const hostPort = htmlEscape(o.server.replaceAll("https://", ""));
  let out = `${o.program} join ${hostPort} --token ${token} \\\n\t`;
  for (const pin of o.caCertHashes) out += `--discovery-token-ca-cert-hash ${htmlEscape(pin)} `;
  if (o.controlPlane) {
    out += "\\\n\t--control-plane ";
    if (key) out += `--certificate-key ${key}`;
  }
  return out;
}

/**
 * The worker join command on one line, for outputs and logs rather than kubeadm's message:
 * the template's line breaks and trailing space removed. Holds the token: a secret.
 */
export function workerJoinCommandLine(o: {
  program: string;
  server: string;
  token: string;
  caCertHashes: readonly string[];
}): string {
  return joinCommand({ ...o, controlPlane: false })
    .replace(/\\\n\t/g, "")
    .trim();
}

export interface InitDoneOptions {
  program: string;
  /** The admin kubeconfig path shown in the `sudo cp -i` line (kubeadm: data.KubeConfigPath()). */
  kubeconfigPath: string;
  /** ClusterConfiguration.controlPlaneEndpoint: only with one are control-plane joins shown. */
  controlPlaneEndpoint: string | undefined;
  uploadCerts: boolean;
  joinControlPlaneCommand: string;
  joinWorkerCommand: string;
}

/** initDoneTempl, rendered (after dedent: it starts with an empty line, ends with a newline). */
export function initDoneMessage(o: InitDoneOptions): string {
  let out = `
Your Kubernetes control-plane has initialized successfully!

To start using your cluster, you need to run the following as a regular user:

  mkdir -p $HOME/.kube
  sudo cp -i ${o.kubeconfigPath} $HOME/.kube/config
  sudo chown $(id -u):$(id -g) $HOME/.kube/config

Alternatively, if you are the root user, you can run:

  export KUBECONFIG=/etc/kubernetes/admin.conf

You should now deploy a pod network to the cluster.
Run "kubectl apply -f [podnetwork].yaml" with one of the options listed at:
  https://kubernetes.io/docs/concepts/cluster-administration/addons/

`;
  if (o.controlPlaneEndpoint) {
    if (o.uploadCerts) {
      out += `You can now join any number of the control-plane node running the following command on each as root:

  ${o.joinControlPlaneCommand}

Please note that the certificate-key gives access to cluster sensitive data, keep it secret!
As a safeguard, uploaded-certs will be deleted in two hours; If necessary, you can use
"${o.program} init phase upload-certs --upload-certs" to reload certs afterward.

`;
    } else {
      out += `You can now join any number of control-plane nodes by copying certificate authorities
and service account keys on each node and then running the following as root:

  ${o.joinControlPlaneCommand}

`;
    }
  }
  out += `Then you can join any number of worker nodes by running the following on each as root:

${o.joinWorkerCommand}
`;
  return out;
}

export interface ShowJoinCommandOptions {
  program: string;
  kubeconfigPath: string;
  /** admin.conf's server URL and the pins of its CAs. */
  server: string;
  caCertHashes: readonly string[];
  /** Every bootstrap token ("<id>.<secret>"), in configuration order. */
  tokens: readonly string[];
  controlPlaneEndpoint: string | undefined;
  uploadCerts: boolean;
  certificateKey: string | undefined;
  skipTokenPrint: boolean;
  skipCertificateKeyPrint: boolean;
}

/** Everything show-join-command prints: the message once per token (showJoinCommand). */
export function showJoinCommandText(o: ShowJoinCommandOptions): string {
  return o.tokens
    .map((token) => {
      const common = {
        program: o.program,
        server: o.server,
        token,
        caCertHashes: o.caCertHashes,
        skipTokenPrint: o.skipTokenPrint,
      };
      return initDoneMessage({
        program: o.program,
        kubeconfigPath: o.kubeconfigPath,
        controlPlaneEndpoint: o.controlPlaneEndpoint,
        uploadCerts: o.uploadCerts,
        joinControlPlaneCommand: joinCommand({
          ...common,
          controlPlane: true,
          ...(o.certificateKey !== undefined ? { certificateKey: o.certificateKey } : {}),
          skipCertificateKeyPrint: o.skipCertificateKeyPrint,
        }),
        joinWorkerCommand: joinCommand({ ...common, controlPlane: false }),
      });
    })
    .join("");
}
