import { execFileSync } from "node:child_process";
import { mkdtemp, mkdir, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  applyPatches,
  createPatchFile,
  mergePatch,
  parsePatchFileName,
  MAX_PATCH_DIR_DEPTH,
  MAX_PATCH_DIR_ENTRIES,
  readPatchDirectory,
  type PatchSet,
} from "../../../src/manifests/patches.js";
import { LocalHost } from "../../../src/remote/local.js";

describe("patch file names (kubeadm's parseFilename)", () => {
  const cases: [string, ReturnType<typeof parsePatchFileName>][] = [
    ["kube-apiserver.yaml", { kind: "patch", target: "kube-apiserver", type: "strategic" }],
    ["kube-apiserver+json.json", { kind: "patch", target: "kube-apiserver", type: "json" }],
    ["etcd0+merge.yaml", { kind: "patch", target: "etcd", type: "merge" }],
    [
      "kube-scheduler-extra+strategic.json",
      { kind: "patch", target: "kube-scheduler", type: "strategic" },
    ],
    [
      "kubeletconfiguration.yaml",
      { kind: "patch", target: "kubeletconfiguration", type: "strategic" },
    ],
    ["corednsdeployment+json.yaml", { kind: "patch", target: "corednsdeployment", type: "json" }],
    [
      "kube-controller-manager.yaml",
      { kind: "patch", target: "kube-controller-manager", type: "strategic" },
    ],
  ];
  for (const [name, want] of cases) {
    it(name, () => expect(parsePatchFileName(name)).toEqual(want));
  }

  it("ignores unknown targets and extensions, as kubeadm (a warning, not an error)", () => {
    expect(parsePatchFileName("kube-proxy.yaml")).toEqual({
      kind: "ignored",
      reason:
        "unknown target, must be one of [etcd kube-apiserver kube-controller-manager kube-scheduler kubeletconfiguration corednsdeployment]",
    });
    expect(parsePatchFileName("kube-apiserver.yml")).toEqual({
      kind: "ignored",
      reason: "the file extension must be one of [json yaml]",
    });
    expect(parsePatchFileName("README.md").kind).toBe("ignored");
  });

  it("refuses an unknown patch type after '+', naming the file", () => {
    expect(() => parsePatchFileName("kube-apiserver+yaml.yaml")).toThrow(
      /patch file "kube-apiserver\+yaml.yaml": unknown or missing patch type after '\+'/,
    );
    expect(() => parsePatchFileName("etcd+.json")).toThrow(/unknown or missing patch type/);
  });
});

describe("applying patches", () => {
  const pod = {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: "kube-apiserver", annotations: { a: "1" } },
    spec: { containers: [{ name: "kube-apiserver", image: "x", command: ["kube-apiserver"] }] },
  };
  const set = (...files: ReturnType<typeof createPatchFile>[]): PatchSet => ({
    dir: "/p",
    files,
    ignored: [],
  });

  it("applies a JSON patch", () => {
    const out = applyPatches(
      "kube-apiserver",
      pod,
      set(
        createPatchFile(
          "/p/kube-apiserver+json.yaml",
          "kube-apiserver",
          "json",
          '- op: add\n  path: /spec/containers/0/command/-\n  value: --v=4\n- op: replace\n  path: /metadata/annotations/a\n  value: "2"\n',
        ),
      ),
    );
    expect(out.spec.containers[0]!.command).toEqual(["kube-apiserver", "--v=4"]);
    expect(out.metadata.annotations.a).toBe("2");
    expect(pod.metadata.annotations.a).toBe("1");
  });

  it("applies a merge patch (RFC 7386: lists replaced, null deletes)", () => {
    const out = applyPatches(
      "kube-apiserver",
      pod,
      set(
        createPatchFile(
          "/p/kube-apiserver+merge.json",
          "kube-apiserver",
          "merge",
          '{"metadata":{"annotations":{"a":null,"b":"2"}},"spec":{"containers":[{"name":"other"}]}}',
        ),
      ),
    );
    expect(out.metadata.annotations).toEqual({ b: "2" });
    expect(out.spec.containers).toEqual([{ name: "other" }]);
    expect(mergePatch({ a: { b: 1, c: 2 } }, { a: { c: null, d: 3 } })).toEqual({
      a: { b: 1, d: 3 },
    });
    expect(mergePatch({ a: 1 }, ["x"])).toEqual(["x"]);
  });

  it("applies a strategic merge patch with the Pod's merge keys", () => {
    const out = applyPatches(
      "kube-apiserver",
      pod,
      set(
        createPatchFile(
          "/p/kube-apiserver.yaml",
          "kube-apiserver",
          "strategic",
          "spec:\n  containers:\n  - name: kube-apiserver\n    resources:\n      requests:\n        cpu: 500m\n",
        ),
      ),
    );
    expect(out.spec.containers).toEqual([
      {
        name: "kube-apiserver",
        image: "x",
        command: ["kube-apiserver"],
        resources: { requests: { cpu: "500m" } },
      },
    ]);
  });

  it("applies every document of a file in order and logs each as kubeadm", () => {
    const lines: string[] = [];
    const out = applyPatches(
      "kube-apiserver",
      pod,
      set(
        createPatchFile(
          "/p/kube-apiserver+merge.yaml",
          "kube-apiserver",
          "merge",
          "metadata:\n  annotations:\n    a: first\n---\n---\nmetadata:\n  annotations:\n    a: second\n",
        ),
      ),
      (l) => lines.push(l),
    );
    expect(out.metadata.annotations.a).toBe("second");
    expect(lines).toEqual([
      '[patches] Applied patch of type "application/merge-patch+json" to target "kube-apiserver"',
      '[patches] Applied patch of type "application/merge-patch+json" to target "kube-apiserver"',
    ]);
  });

  it("ignores other targets' patches", () => {
    const out = applyPatches(
      "etcd",
      pod,
      set(
        createPatchFile(
          "/p/kube-apiserver+merge.yaml",
          "kube-apiserver",
          "merge",
          "metadata: {name: changed}\n",
        ),
      ),
    );
    expect(out).toEqual(pod);
  });

  it("names the file and patch type when a patch does not apply", () => {
    expect(() =>
      applyPatches(
        "kube-apiserver",
        pod,
        set(
          createPatchFile(
            "/p/kube-apiserver+json.json",
            "kube-apiserver",
            "json",
            '[{"op":"remove","path":"/spec/nothing"}]',
          ),
        ),
      ),
    ).toThrow(
      /could not apply the patch of type "application\/json-patch\+json" from \/p\/kube-apiserver\+json.json to target "kube-apiserver": .*OPERATION_PATH_UNRESOLVABLE/,
    );
    // A JSON patch that is not a list is refused earlier, when read (below).
  });

  it("names the file holding invalid YAML", () => {
    expect(() =>
      createPatchFile("/p/etcd.yaml", "etcd", "strategic", "spec:\n  containers: [\n"),
    ).toThrow(/patch file \/p\/etcd.yaml is not valid YAML/);
  });
});

describe("a patch that is not one (refused when read, before any manifest is written)", () => {
  // A text that is not YAML parses as one string; as a merge patch, a string replaces the whole
  // target (RFC 7386), and kube-apiserver.yaml became that string on disk.
  it.each([
    ["merge", "kube-apiserver+merge.yaml", "not a patch at all", "a string"],
    ["strategic", "kube-apiserver.yaml", "- a\n- b\n", "a list"],
    ["json", "kube-apiserver+json.yaml", "op: add\n", "a mapping"],
  ] as const)("a %s patch file %s holding %j", (type, name, text, what) => {
    expect(() => createPatchFile(`/p/${name}`, "kube-apiserver", type, text)).toThrow(
      `patch file /p/${name}: document 1 is ${what}, not ${type === "json" ? "a list of JSON patch operations" : "a mapping"}`,
    );
  });
});

describe("reading a patch directory through the host", () => {
  let root: string;
  let host: LocalHost;
  const write = async (path: string, text: string) => {
    await mkdir(join(root, "patches", path, ".."), { recursive: true });
    await writeFile(join(root, "patches", path), text);
  };

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), "kf-patches-"));
    host = new LocalHost({ rootfs: root });
  });
  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it("applies files in kubeadm's walk order (lexical, sub-directories included)", async () => {
    await write("kube-apiserver1+merge.yaml", "metadata: {annotations: {order: one}}\n");
    await write(
      "kube-apiserver0+merge.yaml",
      "metadata: {annotations: {order: zero, zero: 'yes'}}\n",
    );
    await write("kube-apiserver2/kube-apiserver.yaml", "metadata: {annotations: {order: sub}}\n");
    await write(
      "kube-apiserver3+json.json",
      '[{"op":"add","path":"/metadata/annotations/last","value":"3"}]',
    );
    await write("notes.txt", "not a patch");
    await write("kube-proxy.yaml", "x: 1\n");
    await write("etcd.yaml", "");
    const lines: string[] = [];
    const set = await readPatchDirectory(host, "/patches", (l) => lines.push(l));
    expect(set.files.map((f) => f.source)).toEqual([
      "/patches/kube-apiserver0+merge.yaml",
      "/patches/kube-apiserver1+merge.yaml",
      "/patches/kube-apiserver2/kube-apiserver.yaml",
      "/patches/kube-apiserver3+json.json",
    ]);
    expect(set.ignored).toEqual(["etcd.yaml", "kube-proxy.yaml", "notes.txt"]);
    const out = applyPatches("kube-apiserver", { metadata: { name: "kube-apiserver" } }, set);
    // YAML 1.1 as Kubernetes reads it: the quoted 'yes' stays a string.
    expect(out).toEqual({
      metadata: { name: "kube-apiserver", annotations: { order: "sub", zero: "yes", last: "3" } },
    });
    expect(lines).toEqual([
      '[patches] Reading patches from path "/patches"',
      '[patches] Ignoring empty file: "etcd.yaml"',
      '[patches] Ignoring file "kube-proxy.yaml": unknown target, must be one of [etcd kube-apiserver kube-controller-manager kube-scheduler kubeletconfiguration corednsdeployment]',
      '[patches] Ignoring file "notes.txt": the file extension must be one of [json yaml]',
      "[patches] Found the following patch files: [kube-apiserver0+merge.yaml kube-apiserver1+merge.yaml kube-apiserver.yaml kube-apiserver3+json.json]",
      "[patches] Ignored the following files: [etcd.yaml kube-proxy.yaml notes.txt]",
    ]);
  });

  it("reads a directory once per host, as kubeadm caches it per process", async () => {
    await write("etcd.yaml", "metadata: {annotations: {a: b}}\n");
    const lines: string[] = [];
    const first = await readPatchDirectory(host, "/patches", (l) => lines.push(l));
    await write("etcd+merge.yaml", "metadata: {annotations: {a: c}}\n");
    const second = await readPatchDirectory(host, "/patches", (l) => lines.push(l));
    expect(second).toBe(first);
    expect(lines.filter((l) => l.includes("Reading patches"))).toHaveLength(1);
    const fresh = await readPatchDirectory(new LocalHost({ rootfs: root }), "/patches");
    expect(fresh.files).toHaveLength(2);
  });

  it("does not follow a linked folder, nor read a FIFO", async () => {
    await write("kube-apiserver.yaml", "metadata: {annotations: {own: yes}}\n");
    // A link to a folder of patches elsewhere (for kubeadm's walk, a link is not a folder).
    await write("../elsewhere/etcd.yaml", "metadata: {annotations: {foreign: yes}}\n");
    await symlink(join(root, "elsewhere"), join(root, "patches", "linked"));
    execFileSync("mkfifo", [join(root, "patches", "kube-scheduler.yaml")]);
    const lines: string[] = [];
    const set = await readPatchDirectory(host, "/patches", (l) => lines.push(l));
    expect(set.files.map((f) => f.source)).toEqual(["/patches/kube-apiserver.yaml"]);
    expect(set.ignored).toEqual(["kube-scheduler.yaml", "linked"]);
    expect(lines).toContain('[patches] Ignoring "linked": a link to a folder is not followed');
    expect(lines).toContain('[patches] Ignoring "kube-scheduler.yaml": not a regular file');
  });

  it("refuses a tree too large or too deep to be a patch folder, naming it", async () => {
    for (let i = 0; i <= MAX_PATCH_DIR_ENTRIES; i++) await write(`many/f${i}.txt`, "x");
    await expect(readPatchDirectory(host, "/patches/many")).rejects.toThrow(
      `could not list patch files for path "/patches/many": it holds more than ${MAX_PATCH_DIR_ENTRIES} entries`,
    );
    await write(`deep/${"d/".repeat(MAX_PATCH_DIR_DEPTH + 1)}etcd.yaml`, "a: b\n");
    await expect(readPatchDirectory(host, "/patches/deep")).rejects.toThrow(
      `it nests folders more than ${MAX_PATCH_DIR_DEPTH} deep`,
    );
  });

  it("prints what reading said once, to the first caller that prints", async () => {
    await write("etcd.yaml", "metadata: {annotations: {a: b}}\n");
    const key = {};
    // Preflight reads it without printing; the phase that applies it prints.
    await readPatchDirectory(host, "/patches", undefined, key);
    const lines: string[] = [];
    await readPatchDirectory(host, "/patches", (l) => lines.push(l), key);
    await readPatchDirectory(host, "/patches", (l) => lines.push(l), key);
    expect(lines).toEqual([
      '[patches] Reading patches from path "/patches"',
      "[patches] Found the following patch files: [etcd.yaml]",
    ]);
  });

  it("fails on a missing directory, a file instead of one, a bad type and bad content", async () => {
    await expect(readPatchDirectory(host, "/nowhere")).rejects.toThrow(
      'could not list patch files for path "/nowhere": it does not exist',
    );
    await write("file.yaml", "x: 1\n");
    await expect(readPatchDirectory(host, "/patches/file.yaml")).rejects.toThrow(/not a directory/);
    await write("bad/kube-scheduler+yaml.yaml", "x: 1\n");
    await expect(readPatchDirectory(host, "/patches/bad")).rejects.toThrow(
      /kube-scheduler\+yaml.yaml/,
    );
    await write("broken/kube-scheduler.yaml", "a: [\n");
    await expect(readPatchDirectory(host, "/patches/broken")).rejects.toThrow(
      /patch file \/patches\/broken\/kube-scheduler.yaml is not valid YAML/,
    );
  });
});
