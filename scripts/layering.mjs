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

/** How deep below src/ a module may sit (src/a/b/c/d/x.ts is 4). */
const MAX_DEPTH = 5;

/**
 * A relative import, from a module `depth` folders below src/, that climbs to src/ and into one
 * of `folders` ("../cluster" from src/config/docker/ is src/config/cluster, not src/cluster).
 */
const into = (folders, depth) => `^(\\.\\./){${depth}}(${folders.join("|")})(/|$)`;

/** `files` globs of the modules `depth` folders below src/ in one of `tops`. */
const atDepth = (tops, depth) => tops.map((t) => `src/${t}/${"*/".repeat(depth - 1)}*.ts`);

const depths = Array.from({ length: MAX_DEPTH }, (_, i) => i + 1);

const edgeImports = (depth) => ({
  regex: into(EDGES, depth),
  message: "Only the edges (src/action, src/cli) import the edges.",
});

const belowEdges = depths.map((depth) => ({
  files: [`src/${"*/".repeat(depth)}*.ts`],
  ignores: EDGES.map((e) => `src/${e}/**`),
  rules: { "no-restricted-imports": ["error", { patterns: [edgeImports(depth)] }] },
}));

const pure = depths.map((depth) => ({
  files: atDepth(PURE, depth),
  rules: {
    "no-restricted-imports": [
      "error",
      {
        paths: IO_MODULES.flatMap((m) => [m, `node:${m}`]).map((name) => ({
          name,
          message: "Pure builders do no I/O: read and write through the effect side.",
        })),
        patterns: [
          edgeImports(depth),
          {
            regex: into(EFFECTS, depth),
            message:
              "Pure builders (config, pki, kubeconfig, manifests, types) do not import the effect side; move the code that needs it there, or the shared type to src/types.",
          },
        ],
      },
    ],
  },
}));

export const layering = [
  ...belowEdges,
  ...pure,
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
    },
  },
];
