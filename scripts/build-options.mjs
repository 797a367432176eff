// esbuild options shared by the build, the dist check, the benchmarks and the bundle tests.
// ESM output (the package is "type": "module"), split into chunks the three entry points share
// (dist/chunks/), minified. Modules imported with `import()` become chunks of their own that load
// only when that code runs: ssh2, @actions/cache, @actions/artifact, @kubernetes/client-node.

/** ssh2's optional native add-ons must never enter the bundle (mscdex/ssh2#1087). */
const optionalNativeAddons = {
  name: "leave-out-optional-native-addons",
  setup(build) {
    build.onResolve({ filter: /^cpu-features$|sshcrypto\.node$/ }, (args) => ({
      path: args.path,
      namespace: "left-out",
    }));
    build.onLoad({ filter: /.*/, namespace: "left-out" }, (args) => ({
      contents: `throw new Error(${JSON.stringify(`optional native add-on ${args.path} is left out of the kubeforge bundle`)});`,
      loader: "js",
    }));
  },
};

// Modules without side effects whose packages do not say so (package.json "sideEffects"), so
// esbuild keeps every import of them even when nothing imported is used. Marked here, an unused
// import is dropped: @actions/core imports @actions/http-client (and undici under it, 400 KB
// minified) for getIDToken only, which kubeforge never calls, so the action's entry points no
// longer load them at start-up; the code that downloads imports them when it runs.
const SIDE_EFFECT_FREE = [
  /\/node_modules\/@actions\/http-client\/lib\/[^/]+\.js$/,
  /\/node_modules\/@actions\/core\/lib\/oidc-utils\.js$/,
];

const sideEffectFree = {
  name: "side-effect-free-modules",
  setup(build) {
    build.onResolve({ filter: /^@actions\/http-client|\/oidc-utils\.js$/ }, async (args) => {
      if (args.pluginData?.resolving) return undefined;
      const resolved = await build.resolve(args.path, {
        kind: args.kind,
        importer: args.importer,
        resolveDir: args.resolveDir,
        pluginData: { resolving: true },
      });
      if (resolved.errors.length > 0 || !SIDE_EFFECT_FREE.some((re) => re.test(resolved.path)))
        return undefined;
      return { path: resolved.path, sideEffects: false };
    });
  },
};

// An ES module import of node:http makes Node list the module's exports, which reads its lazy
// WebSocket, CloseEvent and MessageEvent getters and so loads Node's own copy of undici at start-up
// (node:http's lazyUndici; a tenth of the action's start-up). Bundled code gets node:http through
// a CommonJS module that re-exports `require("node:http")` instead: esbuild's namespace for it
// reads each property when it is used, so the lazy getters stay unread and the accessors
// (globalAgent, which @actions/http-client reads, and maxHeaderSize) stay live.
const NODE_HTTP = "node-http-without-facade";
const nodeHttpByRequire = {
  name: "node-http-by-require",
  setup(build) {
    build.onResolve({ filter: /^(node:)?http$/ }, (args) =>
      args.kind === "import-statement" ? { path: "node:http", namespace: NODE_HTTP } : undefined,
    );
    build.onLoad({ filter: /.*/, namespace: NODE_HTTP }, () => ({
      loader: "js",
      contents: 'module.exports = require("node:http");',
    }));
  },
};

/** The oldest Node.js major the bundles run on (package.json `engines`, action.yml `node24`). */
export const MIN_NODE_MAJOR = 24;

// Runs before any bundled module: on an older Node one sentence, not the TypeError a missing
// API raises somewhere inside a dependency. Every chunk carries it, so whichever chunk Node
// evaluates first checks. (Node builtins are imported by namespace where a named export is newer
// than that Node, so the bundle links there and gets this far.)
const nodeVersionCheck = [
  `if (Number(process.versions.node.split(".")[0]) < ${MIN_NODE_MAJOR}) {`,
  `process.stderr.write("kubeforge needs Node.js ${MIN_NODE_MAJOR} or later; this is Node.js " + process.version + "\\n");`,
  "process.exit(1); }",
].join(" ");

// CommonJS dependencies call `require` for Node builtins, which ES modules lack: each chunk gets
// one from createRequire. `__dirname`/`__filename` are not declared there (a dependency of a shared
// chunk declares its own at the top level): `define` turns CommonJS code's free references into
// import.meta.dirname/filename, which ES modules have.
const requireBanner =
  'import { createRequire as __kubeforgeCreateRequire } from "node:module"; const require = __kubeforgeCreateRequire(import.meta.url);';

export const entryPoints = {
  cli: "src/cli/main.ts",
  main: "src/action/main.ts",
  post: "src/action/post.ts",
};

/** Where the shared chunks go, relative to the output folder. */
export const CHUNKS_DIR = "chunks";

/** @returns {import("esbuild").BuildOptions} */
export function buildOptions(outdir) {
  return {
    entryPoints,
    outdir,
    bundle: true,
    platform: "node",
    target: "node24",
    format: "esm",
    packages: "bundle",
    // Packages' ES module builds before their CommonJS ones (esbuild's default for Node is the
    // reverse): @peculiar/x509, asn1js and tsyringe then need no CommonJS wrappers and shrink by
    // tree shaking, which cuts a fifth of the action's start-up.
    mainFields: ["module", "main"],
    splitting: true,
    // An import esbuild cannot match is undefined at run time (a crash far from its cause):
    // the build fails instead.
    logOverride: { "import-is-undefined": "error" },
    chunkNames: `${CHUNKS_DIR}/[name]-[hash]`,
    minify: true,
    // Function and class names survive minification: @peculiar/asn1-schema compares constructor
    // names ("Sequence"), and stack traces in a user's log stay readable.
    keepNames: true,
    define: { __dirname: "import.meta.dirname", __filename: "import.meta.filename" },
    banner: { js: `${requireBanner} ${nodeVersionCheck}` },
    // Minified output keeps no licence comments: dist/licenses.txt carries every bundled
    // package's licence instead (scripts/dist.mjs).
    legalComments: "none",
    logLevel: "warning",
    plugins: [optionalNativeAddons, sideEffectFree, nodeHttpByRequire],
  };
}
