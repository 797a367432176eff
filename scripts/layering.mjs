// The direction of dependencies (DESIGN.md "Layout and the direction of dependencies") as ESLint
// rules: the pure builders import no side effects and no I/O, and nothing below the edges
// imports an edge. eslint.config.js applies them; test/unit/lint/layering.test.ts shows they
// catch a wrong import.

/** Folders under src/ whose modules do no I/O (shared object types at the bottom are pure too). */
export const PURE = ["config", "pki", "kubeconfig", "manifests", "types"];
/** Folders with side effects, and the orchestration above them. */
export const EFFECTS = ["remote", "kube", "node", "etcd", "workflow", "phases", "cluster"];
/** The edges: the action and the CLI. */
export const EDGES = ["action", "cli"];

/** Node's modules that reach files, processes or the network. */
const IO_MODULES = [
  "child_process",
  "dgram",
  "dns",
  "fs",
  "fs/promises",
  "http",
  "http2",
  "https",
  "net",
  "readline",
  "tls",
  "worker_threads",
];

/** A relative import that climbs out of its folder into one of `folders` under src/. */
const into = (folders) => `^(\\.\\./)+(${folders.join("|")})(/|$)`;

const edgeImports = {
  regex: into(EDGES),
  message: "Only the edges (src/action, src/cli) import the edges.",
};

export const layering = [
  {
    files: ["src/**/*.ts"],
    ignores: EDGES.map((e) => `src/${e}/**`),
    rules: { "no-restricted-imports": ["error", { patterns: [edgeImports] }] },
  },
  {
    files: PURE.map((p) => `src/${p}/**/*.ts`),
    rules: {
      "no-restricted-globals": [
        "error",
        {
          name: "fetch",
          message: "Pure builders do no I/O: take fetch as a parameter on the effect side.",
        },
        {
          name: "process",
          message: "Pure builders read no environment: take what they need as a parameter.",
        },
      ],
      "no-restricted-imports": [
        "error",
        {
          paths: IO_MODULES.flatMap((m) => [m, `node:${m}`]).map((name) => ({
            name,
            message: "Pure builders do no I/O: read and write through the effect side.",
          })),
          patterns: [
            edgeImports,
            {
              regex: into(EFFECTS),
              message:
                "Pure builders (config, pki, kubeconfig, manifests, types) do not import the effect side; move the code that needs it there, or the shared type to src/types.",
            },
          ],
        },
      ],
    },
  },
];
