import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  initDoneMessage,
  joinCommand,
  showJoinCommandText,
} from "../../../../src/manifests/join-command.js";
import { caCertHash } from "../../../../src/pki/pin.js";
import { opensslPin } from "./tools.js";

// kubeadm: cmd/util/join.go joinCommandTemplate (its join_test.go expects
// "kubeadm join test-server:6443 --token <value withheld> \\\n\t--discovery-token-ca-cert-hash"),
// cmd/phases/init/showjoincommand.go initDoneTempl.

const PIN = "sha256:7c2e69131a36ae2a042a339b33381c6d0d43887e2de83720eff5359e26aec866";
const KEY = "f8902e114ef118304e561c3ecd4d0b543adc226b7a07f675f56564185ffe0c07";
const TOKEN = "9vr73a.a8uxyaju799qwdjv";
const base = {
  program: "kubeadm",
  server: "https://192.168.0.200:6443",
  token: TOKEN,
  caCertHashes: [PIN],
};

describe("joinCommand", () => {
  it.each([
    [
      "worker (a space after the pin, as kubeadm)",
      { ...base, controlPlane: false },
      `kubeadm join 192.168.0.200:6443 --token ${TOKEN} \\\n\t--discovery-token-ca-cert-hash ${PIN} `,
    ],
    [
      "control plane with upload-certs",
      { ...base, controlPlane: true, certificateKey: KEY },
      `kubeadm join 192.168.0.200:6443 --token ${TOKEN} \\\n\t--discovery-token-ca-cert-hash ${PIN} \\\n\t--control-plane --certificate-key ${KEY}`,
    ],
    [
      "control plane without a certificate key",
      { ...base, controlPlane: true },
      `kubeadm join 192.168.0.200:6443 --token ${TOKEN} \\\n\t--discovery-token-ca-cert-hash ${PIN} \\\n\t--control-plane `,
    ],
    [
      "skip-token-print and skip-certificate-key-print",
      {
        ...base,
        controlPlane: true,
        certificateKey: KEY,
        skipTokenPrint: true,
        skipCertificateKeyPrint: true,
      },
      `kubeadm join 192.168.0.200:6443 --token <value withheld> \\\n\t--discovery-token-ca-cert-hash ${PIN} \\\n\t--control-plane --certificate-key <value withheld>`,
    ],
    [
      "two CAs, IPv6 server, our program name",
      {
        ...base,
        program: "kubeforge",
        server: "https://[fd00::1]:6443",
        caCertHashes: [PIN, "sha256:" + "ab".repeat(32)],
        controlPlane: false,
      },
      `kubeforge join [fd00::1]:6443 --token ${TOKEN} \\\n\t--discovery-token-ca-cert-hash ${PIN} --discovery-token-ca-cert-hash sha256:${"ab".repeat(32)} `,
    ],
  ])("%s", (_name, options, want) => {
    expect(joinCommand(options)).toBe(want);
  });

  it("matches kubeadm's join_test.go expectation", () => {
    const cmd = joinCommand({
      ...base,
      server: "test-server:6443",
      controlPlane: true,
      skipTokenPrint: true,
      skipCertificateKeyPrint: true,
    });
    expect(cmd).toContain(
      "kubeadm join test-server:6443 --token <value withheld> \\\n\t--discovery-token-ca-cert-hash",
    );
  });

  it("carries the pin openssl computes for kubeadm's fixture CA", async () => {
    const caPEM = Buffer.from(
      readFileSync(join(import.meta.dirname, "fixtures/kubeadm-dryrun-ca.b64"), "utf8").trim(),
      "base64",
    ).toString();
    const pin = await opensslPin(caPEM);
    expect(caCertHash(caPEM)).toBe(pin);
    expect(
      joinCommand({ ...base, caCertHashes: [caCertHash(caPEM)], controlPlane: false }),
    ).toContain(`--discovery-token-ca-cert-hash ${pin} `);
  });
});

const HEAD = `
Your Kubernetes control-plane has initialized successfully!

To start using your cluster, you need to run the following as a regular user:

  mkdir -p $HOME/.kube
  sudo cp -i /etc/kubernetes/admin.conf $HOME/.kube/config
  sudo chown $(id -u):$(id -g) $HOME/.kube/config

Alternatively, if you are the root user, you can run:

  export KUBECONFIG=/etc/kubernetes/admin.conf

You should now deploy a pod network to the cluster.
Run "kubectl apply -f [podnetwork].yaml" with one of the options listed at:
  https://kubernetes.io/docs/concepts/cluster-administration/addons/

`;
const TAIL = `Then you can join any number of worker nodes by running the following on each as root:

WORKER
`;

describe("initDoneMessage", () => {
  const common = {
    program: "kubeadm",
    kubeconfigPath: "/etc/kubernetes/admin.conf",
    joinControlPlaneCommand: "CONTROL-PLANE",
    joinWorkerCommand: "WORKER",
  };

  it("without a control-plane endpoint: only the worker command", () => {
    expect(initDoneMessage({ ...common, controlPlaneEndpoint: undefined, uploadCerts: true })).toBe(
      HEAD + TAIL,
    );
  });

  it("with an endpoint and upload-certs: the control-plane command and the certificate-key warning", () => {
    expect(initDoneMessage({ ...common, controlPlaneEndpoint: "lb:6443", uploadCerts: true })).toBe(
      HEAD +
        `You can now join any number of the control-plane node running the following command on each as root:

  CONTROL-PLANE

Please note that the certificate-key gives access to cluster sensitive data, keep it secret!
As a safeguard, uploaded-certs will be deleted in two hours; If necessary, you can use
"kubeadm init phase upload-certs --upload-certs" to reload certs afterward.

` +
        TAIL,
    );
  });

  it("with an endpoint and no upload-certs: copy the CAs by hand", () => {
    expect(
      initDoneMessage({ ...common, controlPlaneEndpoint: "lb:6443", uploadCerts: false }),
    ).toBe(
      HEAD +
        `You can now join any number of control-plane nodes by copying certificate authorities
and service account keys on each node and then running the following as root:

  CONTROL-PLANE

` +
        TAIL,
    );
  });
});

describe("showJoinCommandText", () => {
  it("prints the whole message once per token, with kubeforge's commands", () => {
    const text = showJoinCommandText({
      program: "kubeforge",
      kubeconfigPath: "/etc/kubernetes/admin.conf",
      server: "https://lb.example.com:6443",
      caCertHashes: [PIN],
      tokens: ["aaaaaa.aaaaaaaaaaaaaaaa", "bbbbbb.bbbbbbbbbbbbbbbb"],
      controlPlaneEndpoint: "lb.example.com:6443",
      uploadCerts: true,
      certificateKey: KEY,
      skipTokenPrint: false,
      skipCertificateKeyPrint: true,
    });
    expect(text.split("Your Kubernetes control-plane has initialized successfully!")).toHaveLength(
      3,
    );
    expect(text).toContain(
      `  kubeforge join lb.example.com:6443 --token aaaaaa.aaaaaaaaaaaaaaaa \\\n\t--discovery-token-ca-cert-hash ${PIN} \\\n\t--control-plane --certificate-key <value withheld>\n`,
    );
    expect(text).toContain(
      `\nkubeforge join lb.example.com:6443 --token bbbbbb.bbbbbbbbbbbbbbbb \\\n\t--discovery-token-ca-cert-hash ${PIN} \n`,
    );
    expect(text).toContain('"kubeforge init phase upload-certs --upload-certs"');
    expect(text).not.toContain(KEY);
  });
});
