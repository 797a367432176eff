// esbuild options shared by the build, the dist check and the bundle tests.
// ESM output (the package is "type": "module"). CommonJS dependencies expect `require` for
// Node builtins and `__dirname` (ssh2's agent), which ES modules lack: the banner defines them.

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

/** The oldest Node.js major the bundles run on (package.json `engines`, action.yml `node24`). */
export const MIN_NODE_MAJOR = 24;

// Runs before any bundled module: on an older Node one sentence, not the TypeError a missing
// API raises somewhere inside a dependency. (Node builtins are imported by namespace where a
// named export is newer than that Node, so the bundle links there and gets this far.)
const nodeVersionCheck = [
  `if (Number(process.versions.node.split(".")[0]) < ${MIN_NODE_MAJOR}) {`,
  `process.stderr.write("kubeforge needs Node.js ${MIN_NODE_MAJOR} or later; this is Node.js " + process.version + "\\n");`,
  "process.exit(1); }",
].join(" ");

export const entryPoints = {
  cli: "src/cli/main.ts",
  main: "src/action/main.ts",
  post: "src/action/post.ts",
};

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
    banner: {
      js: [
        'import { createRequire as __kubeforgeCreateRequire } from "node:module";',
        'import { fileURLToPath as __kubeforgeFileURLToPath } from "node:url";',
        'import { dirname as __kubeforgeDirname } from "node:path";',
        "const require = __kubeforgeCreateRequire(import.meta.url);",
        "const __filename = __kubeforgeFileURLToPath(import.meta.url);",
        "const __dirname = __kubeforgeDirname(__filename);",
        nodeVersionCheck,
      ].join(" "),
    },
    legalComments: "eof",
    logLevel: "warning",
    plugins: [optionalNativeAddons],
  };
}
