import pkg from "../package.json" with { type: "json" };

/** kubeforge's own version, from package.json (bundled at build time). */
export const KUBEFORGE_VERSION: string = pkg.version;
