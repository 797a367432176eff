// SIMULATION (test double). Label and field selectors of list and watch requests.
// k8s: staging/src/k8s.io/apimachinery/pkg/labels/selector.go (Parse: =, ==, !=, in, notin,
// exists, !exists), staging/src/k8s.io/apimachinery/pkg/fields/selector.go (=, ==, !=; only the
// fields a kind declares selectable), pkg/registry/core/pod/strategy.go ToSelectableFields and
// the other <kind>/strategy.go GetAttrs functions for which fields those are.
import { badRequest } from "./status.js";

type Op = "=" | "!=" | "in" | "notin" | "exists" | "!";

interface Requirement {
  key: string;
  op: Op;
  values: string[];
}

export type LabelSelector = Requirement[];

export function parseLabelSelector(text: string | undefined | null): LabelSelector {
  const reqs: Requirement[] = [];
  if (!text || text.trim() === "") return reqs;
  for (const part of splitTopLevel(text)) {
    const s = part.trim();
    if (s === "") throw badRequest(`unable to parse requirement: found '', expected: identifier`);
    let m: RegExpExecArray | null;
    if ((m = /^([^\s!=,()]+)\s+(in|notin)\s+\(([^)]*)\)$/.exec(s))) {
      const values = m[3]!
        .split(",")
        .map((v) => v.trim())
        .filter((v) => v !== "");
      reqs.push({ key: m[1]!, op: m[2] as Op, values });
    } else if ((m = /^([^\s!=,()]+)\s*(==|=|!=)\s*([^\s!=,()]*)$/.exec(s))) {
      reqs.push({ key: m[1]!, op: m[2] === "!=" ? "!=" : "=", values: [m[3]!] });
    } else if ((m = /^!\s*([^\s!=,()]+)$/.exec(s))) {
      reqs.push({ key: m[1]!, op: "!", values: [] });
    } else if ((m = /^([^\s!=,()]+)$/.exec(s))) {
      reqs.push({ key: m[1]!, op: "exists", values: [] });
    } else {
      throw badRequest(`unable to parse requirement: ${JSON.stringify(s)}`);
    }
  }
  return reqs;
}

/** Splits on commas outside parentheses ("a in (x,y),b" → ["a in (x,y)", "b"]). */
function splitTopLevel(text: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let cur = "";
  for (const ch of text) {
    if (ch === "(") depth++;
    if (ch === ")") depth--;
    if (ch === "," && depth === 0) {
      out.push(cur);
      cur = "";
    } else cur += ch;
  }
  out.push(cur);
  return out;
}

export function matchesLabels(
  sel: LabelSelector,
  labels: Record<string, string> | undefined,
): boolean {
  const l = labels ?? {};
  return sel.every((r) => {
    const has = Object.prototype.hasOwnProperty.call(l, r.key);
    const v = l[r.key];
    switch (r.op) {
      case "=":
        return has && v === r.values[0];
      case "!=":
        return !has || v !== r.values[0];
      case "in":
        return has && r.values.includes(v!);
      case "notin":
        return !has || !r.values.includes(v!);
      case "exists":
        return has;
      case "!":
        return !has;
    }
  });
}

/** metav1.LabelSelector (matchLabels + matchExpressions), as RBAC aggregation and workloads use. */
export function matchesLabelSelectorObject(
  sel: {
    matchLabels?: Record<string, string>;
    matchExpressions?: { key: string; operator: string; values?: string[] }[];
  },
  labels: Record<string, string> | undefined,
): boolean {
  const l = labels ?? {};
  for (const [k, v] of Object.entries(sel.matchLabels ?? {})) if (l[k] !== v) return false;
  for (const e of sel.matchExpressions ?? []) {
    const has = Object.prototype.hasOwnProperty.call(l, e.key);
    const v = l[e.key];
    const ok =
      e.operator === "In"
        ? has && (e.values ?? []).includes(v!)
        : e.operator === "NotIn"
          ? !has || !(e.values ?? []).includes(v!)
          : e.operator === "Exists"
            ? has
            : e.operator === "DoesNotExist"
              ? !has
              : false;
    if (!ok) return false;
  }
  return true;
}

export interface FieldRequirement {
  field: string;
  op: "=" | "!=";
  value: string;
}

// Which fields each kind can be selected on (plus metadata.name and metadata.namespace for all).
// k8s: pkg/registry/core/pod/strategy.go, pkg/registry/core/secret/strategy.go,
// pkg/registry/core/node/strategy.go, pkg/registry/core/namespace/strategy.go,
// pkg/registry/core/event/strategy.go, pkg/registry/certificates/certificates/strategy.go
const SELECTABLE: Record<string, string[]> = {
  Pod: [
    "spec.nodeName",
    "spec.restartPolicy",
    "spec.schedulerName",
    "spec.serviceAccountName",
    "spec.hostNetwork",
    "status.phase",
    "status.podIP",
    "status.nominatedNodeName",
  ],
  Secret: ["type"],
  Node: ["spec.unschedulable"],
  Namespace: ["status.phase"],
  Event: [
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "involvedObject.resourceVersion",
    "involvedObject.fieldPath",
    "reason",
    "reportingComponent",
    "source",
    "type",
  ],
  CertificateSigningRequest: ["spec.signerName"],
};

export function parseFieldSelector(
  text: string | undefined | null,
  kind: string,
): FieldRequirement[] {
  const out: FieldRequirement[] = [];
  if (!text || text.trim() === "") return out;
  for (const part of text.split(",")) {
    const m = /^\s*([^=!\s]+)\s*(==|=|!=)\s*(.*?)\s*$/.exec(part);
    if (!m) throw badRequest(`invalid selector: '${text}'; can't understand '${part}'`);
    const field = m[1]!;
    const allowed = ["metadata.name", "metadata.namespace", ...(SELECTABLE[kind] ?? [])];
    if (!allowed.includes(field)) {
      throw badRequest(`field label not supported: ${field}`);
    }
    out.push({ field, op: m[2] === "!=" ? "!=" : "=", value: m[3]! });
  }
  return out;
}

function fieldValue(obj: Record<string, unknown>, field: string): string {
  if (field === "source") {
    const src = obj.source as { component?: string } | undefined;
    return src?.component ?? "";
  }
  let cur: unknown = obj;
  for (const p of field.split(".")) {
    cur = cur && typeof cur === "object" ? (cur as Record<string, unknown>)[p] : undefined;
  }
  if (cur === undefined || cur === null)
    return field === "spec.unschedulable" || field === "spec.hostNetwork" ? "false" : "";
  if (typeof cur === "string") return cur;
  return typeof cur === "number" || typeof cur === "boolean" ? String(cur) : JSON.stringify(cur);
}

export function matchesFields(sel: FieldRequirement[], obj: Record<string, unknown>): boolean {
  return sel.every((r) => (fieldValue(obj, r.field) === r.value) === (r.op === "="));
}

/** The name a list is narrowed to by `metadata.name=<x>`, as RequestInfo records it. */
export function exactName(sel: FieldRequirement[]): string | undefined {
  const r = sel.find((x) => x.field === "metadata.name" && x.op === "=");
  return r?.value;
}
