import { execFileSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { isKeyFileName, REDACTED, redactSecrets } from "../../../src/cluster/diagnostics/redact.js";
import { generateBootstrapToken } from "../../../src/pki/token.js";
import { load } from "js-yaml";

// Secrets out of what diagnostics collect. Keys are made by openssl (real PEM of each kind), the
// kubeconfig is shaped like kubeadm's admin.conf, the token by kubeforge's generator.

function opensslKey(args: string[]): string {
  return execFileSync("openssl", args, { stdio: ["ignore", "pipe", "ignore"] }).toString();
}

/** The base64 body lines of a PEM block: what must never survive. */
const bodyLines = (pem: string) => pem.split("\n").filter((l) => l && !l.startsWith("-----"));

describe("redactSecrets", () => {
  const pkcs8 = opensslKey(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"]);
  const rsa = opensslKey(["genrsa", "-traditional", "2048"]);

  it("cuts the credentials of a kubeconfig and keeps the rest readable", () => {
    const keyData = Buffer.from(rsa).toString("base64");
    const certData = Buffer.from("-----BEGIN CERTIFICATE-----\nMIIB\n").toString("base64");
    const kubeconfig = [
      "apiVersion: v1",
      "clusters:",
      "- cluster:",
      `    certificate-authority-data: ${certData}`,
      "    server: https://10.0.0.1:6443",
      "  name: kubernetes",
      "users:",
      "- name: kubernetes-admin",
      "  user:",
      `    client-certificate-data: ${certData}`,
      `    client-key-data: ${keyData}`,
      "- name: robot",
      "  user:",
      "    token: 9f2b1c0e-secret-bearer",
      "    tokenFile: /var/run/token",
      "",
    ].join("\n");
    const out = redactSecrets(kubeconfig);
    expect(out).not.toContain(keyData);
    expect(out).not.toContain("9f2b1c0e-secret-bearer");
    const doc = load(out) as {
      clusters: { cluster: { server: string; "certificate-authority-data": string } }[];
      users: { name: string; user: Record<string, string> }[];
    };
    // Still a kubeconfig: public parts intact, credentials replaced.
    expect(doc.clusters[0]!.cluster.server).toBe("https://10.0.0.1:6443");
    expect(doc.clusters[0]!.cluster["certificate-authority-data"]).toBe(certData);
    expect(doc.users[0]!.user["client-certificate-data"]).toBe(certData);
    expect(doc.users[0]!.user["client-key-data"]).toBe(REDACTED);
    expect(doc.users[1]!.user.token).toBe(REDACTED);
    expect(doc.users[1]!.user.tokenFile).toBe("/var/run/token");
  });

  it.each([
    ["PKCS#8", () => pkcs8],
    ["PKCS#1", () => rsa],
  ])("replaces a %s private key block, in a file and inside a YAML block scalar", (_k, key) => {
    const pem = key();
    const label = /-----BEGIN ([A-Z ]+)-----/.exec(pem)![1]!;
    const indented = `privateKey: |\n${pem
      .trimEnd()
      .split("\n")
      .map((l) => `  ${l}`)
      .join("\n")}\nnext: value\n`;
    for (const text of [`before\n${pem}after\n`, indented]) {
      const out = redactSecrets(text);
      for (const line of bodyLines(pem)) expect(out).not.toContain(line);
      expect(out).toContain(`-----BEGIN ${label}-----`);
      expect(out).toContain(REDACTED);
    }
    expect(redactSecrets(`before\n${pem}after\n`)).toMatch(/^before\n[\s\S]*\nafter\n$/);
    // The YAML around the key still parses, and the key's sibling is untouched.
    const doc = load(redactSecrets(indented)) as Record<string, string>;
    expect(doc.next).toBe("value");
    expect(doc.privateKey).toContain(REDACTED);
  });

  it("replaces a key block a log cut short and one written as a JSON string", () => {
    const lines = pkcs8.trimEnd().split("\n");
    const cut = `log start\n${lines.slice(0, -2).join("\n")}`;
    const json = JSON.stringify({ key: pkcs8 });
    for (const text of [cut, `level=info msg=${json} tail`]) {
      const out = redactSecrets(text);
      for (const line of bodyLines(pkcs8)) expect(out).not.toContain(line);
    }
    expect(redactSecrets(cut).startsWith("log start\n")).toBe(true);
    expect(redactSecrets(`level=info msg=${json} tail`)).toMatch(/ tail$/);
  });

  it("leaves certificates and public keys alone", () => {
    const pub = execFileSync("openssl", ["pkey", "-pubout"], { input: pkcs8 }).toString();
    expect(redactSecrets(pub)).toBe(pub);
  });

  it("cuts a bootstrap token's secret wherever it is, keeping its public id", () => {
    const token = generateBootstrapToken();
    const [id, secret] = token.split(".") as [string, string];
    const texts = [
      `I0101 kubelet.go:1] bootstrap token ${token} used`, // free text
      `KUBELET_KUBEADM_ARGS="--bootstrap-token=${token}"`, // a flag
      `apiVersion: kubeadm.k8s.io/v1beta4\nbootstrapTokens:\n- token: "${token}"\n`, // YAML
      `kubeadm join 10.0.0.1:6443 --token ${token} --discovery-token-ca-cert-hash sha256:${"a".repeat(64)}`,
    ];
    for (const text of texts) {
      const out = redactSecrets(text);
      expect(out, text).not.toContain(secret);
    }
    expect(redactSecrets(texts[0]!)).toContain(`${id}.${REDACTED}`);
    // The CA hash is public and stays: users compare it.
    expect(redactSecrets(texts[3]!)).toContain(`sha256:${"a".repeat(64)}`);
  });

  it.each([
    ["certificate key flag", "--certificate-key 0f1e2d3c4b5a69788796a5b4c3d2e1f0", "0f1e2d3c4b5a"],
    ["certificateKey field", 'certificateKey: "0f1e2d3c4b5a69788796"', "0f1e2d3c4b5a"],
    ["bearer header", "Authorization: Bearer abc.def-ghi", "abc.def-ghi"],
    ["JWT", "token eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW0ifQ.c2lnbmF0dXJl", "c2lnbmF0dXJl"],
    ["JSON password", '{"user":"a","password":"hunter2hunter2"}', "hunter2hunter2"],
    ["sudoPassword", "  sudoPassword: s3cr3tpw", "s3cr3tpw"],
  ])("cuts a %s", (_what, text, secret) => {
    expect(text).toContain(secret);
    expect(redactSecrets(text)).not.toContain(secret);
  });

  it("does not touch paths and public flags that only look like secret names", () => {
    const manifest = [
      "    - --service-account-key-file=/etc/kubernetes/pki/sa.pub",
      "    - --token-auth-file=/etc/kubernetes/tokens.csv",
      "    - --enable-bootstrap-token-auth=true",
      "    - --discovery-token-ca-cert-hash=sha256:abc",
      "    tokenFile: /var/run/secrets/token",
      "",
    ].join("\n");
    expect(redactSecrets(manifest)).toBe(manifest);
  });

  it("cuts the caller's secrets, whole and line by line, and is stable when run twice", () => {
    const sshKey = "-----BEGIN SECRET-----\nAAAAB3NzaC1yc2EAAAADAQABAAABAQ\nCz7l9Yq\n";
    const text = `session with AAAAB3NzaC1yc2EAAAADAQABAAABAQ and Cz7l9Yq; password: pw-1234-x`;
    const once = redactSecrets(text, [sshKey, "pw-1234-x"]);
    expect(once).not.toContain("AAAAB3NzaC1yc2EAAAADAQABAAABAQ");
    expect(once).toContain("Cz7l9Yq"); // too short a line to hunt for on its own
    expect(once).not.toContain("pw-1234-x");
    expect(redactSecrets(once, [sshKey])).toBe(once);
  });
});

describe("isKeyFileName", () => {
  it.each([
    ["apiserver.key", true],
    ["sa.KEY", true],
    ["etcd.yaml", false],
    ["keys.yaml", false],
  ])("%s → %s", (name, expected) => {
    expect(isKeyFileName(name)).toBe(expected);
  });
});
