// The Corefile kubeadm writes into the coredns ConfigMap, and the test kubeadm uses on re-apply
// to tell its own Corefile from a user's. kubeadm: phases/addons/dns/manifests.go
// (CoreDNSConfigMap) and dns.go (createCoreDNSAddon).

/**
 * kubeadm's Corefile template rendered for a DNS domain. The cache plugin's
 * "disable success/denial <domain>" block (kubernetes/kubernetes#128359, first released in
 * v1.32, so in every release kubeforge supports) is rendered only for a non-empty domain.
 */
export function corefile(dnsDomain: string): string {
  // In kubeadm's manifest the Corefile is a YAML block indented by 4, which the ConfigMap's
  // value does not keep: the cache options sit 7 spaces in, the closing brace 4.
  const cacheOptions =
    dnsDomain === ""
      ? ""
      : ` {\n       disable success ${dnsDomain}\n       disable denial ${dnsDomain}\n    }`;
  return `.:53 {
    errors
    health {
       lameduck 5s
    }
    ready
    kubernetes ${dnsDomain} in-addr.arpa ip6.arpa {
       pods insecure
       fallthrough in-addr.arpa ip6.arpa
       ttl 30
    }
    prometheus :9153
    forward . /etc/resolv.conf {
       max_concurrent 1000
    }
    cache 30${cacheOptions}
    loop
    reload
    loadbalance
}
`;
}

/** A directive ("kubernetes cluster.local in-addr.arpa") and the lines of its block. */
interface Directive {
  tokens: string[];
  block: Directive[];
}

/**
 * Parses a Corefile into server blocks of directives (Caddyfile structure: a directive's
 * arguments end at the end of the line, "{" opens its block). Undefined for anything it cannot
 * read, which callers treat as "not a default Corefile".
 */
function parseCorefile(text: string): Directive[] | undefined {
  const root: Directive = { tokens: [], block: [] };
  const stack: Directive[] = [root];
  for (const rawLine of text.split("\n")) {
    const line = rawLine.replace(/#.*$/, "");
    const words = line.match(/[{}]|[^\s{}]+/g) ?? [];
    let current: Directive | undefined;
    for (const word of words) {
      const parent = stack[stack.length - 1]!;
      if (word === "{") {
        if (!current) return undefined;
        stack.push(current);
        current = undefined;
      } else if (word === "}") {
        if (stack.length === 1) return undefined;
        stack.pop();
        current = undefined;
      } else if (current) {
        current.tokens.push(word);
      } else {
        current = { tokens: [word], block: [] };
        parent.block.push(current);
      }
    }
  }
  return stack.length === 1 ? root.block : undefined;
}

/** "*" in a default matches any one token (corefile-migration writes the domain that way). */
function sameDirective(actual: Directive, wanted: Directive): boolean {
  if (actual.tokens.length !== wanted.tokens.length) return false;
  if (!actual.tokens.every((t, i) => wanted.tokens[i] === "*" || wanted.tokens[i] === t)) {
    return false;
  }
  return sameDirectives(actual.block, wanted.block);
}

/** Equal as multisets: the order of plugins in a server block does not matter to CoreDNS. */
function sameDirectives(actual: Directive[], wanted: Directive[]): boolean {
  if (actual.length !== wanted.length) return false;
  const unused = [...wanted];
  for (const directive of actual) {
    const i = unused.findIndex((w) => sameDirective(directive, w));
    if (i < 0) return false;
    unused.splice(i, 1);
  }
  return true;
}

/**
 * The Corefiles kubeadm itself wrote in releases a cluster may come from: the current one and
 * the one before the cache block (kubeadm ≤1.31), the domain left as a wildcard.
 */
const DEFAULT_COREFILES = [corefile("*"), corefile("").replace("kubernetes  in", "kubernetes * in")]
  .map(parseCorefile)
  .filter((c): c is Directive[] => c !== undefined);

/**
 * Whether an existing Corefile is one kubeadm generated, so that re-applying may replace it.
 * kubeadm asks coredns/corefile-migration (migration.Default), which compares the parsed
 * Corefile with each CoreDNS release's default; this compares with kubeadm's own templates
 * above, plugin order and domain ignored. [M] an approximation: corefile-migration's table of
 * defaults (older CoreDNS releases) was not read.
 */
export function isDefaultCorefile(text: string): boolean {
  const parsed = parseCorefile(text);
  return parsed !== undefined && DEFAULT_COREFILES.some((d) => sameDirectives(parsed, d));
}
