// SIMULATION (test double). The basic validation kube-apiserver applies to the objects kubeadm,
// kubelets and controllers write (422 Invalid with field causes).
// k8s: staging/src/k8s.io/apimachinery/pkg/util/validation/validation.go (DNS-1123, DNS-1035,
// qualified names, label values, config map keys and their exact messages),
// staging/src/k8s.io/apimachinery/pkg/api/validation/objectmeta.go (ValidateObjectMeta, labels,
// annotations), pkg/apis/core/validation/validation.go (ValidateConfigMap, ValidateSecret,
// ValidateNode taints, ValidateNamespaceName, ValidateServiceName),
// pkg/apis/rbac/validation/validation.go, pkg/apis/certificates/validation/validation.go;
// CustomResourceDefinitions: custom-resources.ts.
import { X509Certificate } from "node:crypto";
import { validateCrd } from "./custom-resources.js";
import type { ResourceInfo } from "./resources.js";
import { fieldError, invalid, type FieldError } from "./status.js";
import { parseCSR } from "./x509util.js";

type Json = Record<string, unknown>;

const DNS1123_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_SUBDOMAIN = `${DNS1123_LABEL}(\\.${DNS1123_LABEL})*`;
const DNS1035_LABEL = "[a-z]([-a-z0-9]*[a-z0-9])?";
const QUALIFIED_NAME = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const LABEL_VALUE = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const CONFIG_KEY = "[-._a-zA-Z0-9]+";

const full = (re: string) => new RegExp(`^${re}$`);

export function isDNS1123Subdomain(v: string): string[] {
  const errs: string[] = [];
  if (v.length > 253) errs.push("must be no more than 253 characters");
  if (!full(DNS1123_SUBDOMAIN).test(v)) {
    errs.push(
      `a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '${DNS1123_SUBDOMAIN}')`,
    );
  }
  return errs;
}

export function isDNS1123Label(v: string): string[] {
  const errs: string[] = [];
  if (v.length > 63) errs.push("must be no more than 63 characters");
  if (!full(DNS1123_LABEL).test(v)) {
    errs.push(
      `a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '${DNS1123_LABEL}')`,
    );
  }
  return errs;
}

export function isDNS1035Label(v: string): string[] {
  const errs: string[] = [];
  if (v.length > 63) errs.push("must be no more than 63 characters");
  if (!full(DNS1035_LABEL).test(v)) {
    errs.push(
      `a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '${DNS1035_LABEL}')`,
    );
  }
  return errs;
}

/** k8s: staging/src/k8s.io/apimachinery/pkg/api/validation/path/name.go IsValidPathSegmentName */
export function isPathSegmentName(v: string): string[] {
  if (v === ".") return ["may not be '.'"];
  if (v === "..") return ["may not be '..'"];
  const errs: string[] = [];
  if (v.includes("/")) errs.push("may not contain '/'");
  if (v.includes("%")) errs.push("may not contain '%'");
  return errs;
}

export function isQualifiedName(v: string): string[] {
  const parts = v.split("/");
  let name = v;
  const errs: string[] = [];
  if (parts.length === 2) {
    const [prefix, n] = parts as [string, string];
    name = n;
    if (prefix.length === 0) errs.push("prefix part must be non-empty");
    else {
      for (const m of isDNS1123Subdomain(prefix)) errs.push(`prefix part ${m}`);
    }
  } else if (parts.length > 2) {
    return [
      `a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '${QUALIFIED_NAME}') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`,
    ];
  }
  if (name.length === 0) errs.push("name part must be non-empty");
  else if (name.length > 63) errs.push("name part must be no more than 63 characters");
  if (name.length > 0 && !full(QUALIFIED_NAME).test(name)) {
    errs.push(
      `name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '${QUALIFIED_NAME}')`,
    );
  }
  return errs;
}

export function isValidLabelValue(v: string): string[] {
  const errs: string[] = [];
  if (v.length > 63) errs.push("must be no more than 63 characters");
  if (!full(LABEL_VALUE).test(v)) {
    errs.push(
      `a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '${LABEL_VALUE}')`,
    );
  }
  return errs;
}

export function isConfigMapKey(v: string): string[] {
  const errs: string[] = [];
  if (v.length > 253) errs.push("must be no more than 253 characters");
  if (!full(CONFIG_KEY).test(v)) {
    errs.push(
      `a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '${CONFIG_KEY}')`,
    );
  }
  if (v === ".") errs.push("must not be '.'");
  else if (v === "..") errs.push("must not be '..'");
  else if (v.startsWith("..")) errs.push("must not start with '..'");
  return errs;
}

/** The name rule each kind uses. k8s: pkg/apis/core/validation/validation.go Validate*Name. */
function nameRule(info: ResourceInfo): (v: string) => string[] {
  if (info.kind === "Namespace") return isDNS1123Label;
  if (info.kind === "Service") return isDNS1035Label;
  if (info.group === "rbac.authorization.k8s.io") return isPathSegmentName;
  if (info.kind === "CertificateSigningRequest") return isPathSegmentName;
  return isDNS1123Subdomain;
}

function str(v: unknown): string | undefined {
  return typeof v === "string" ? v : undefined;
}

function validateMeta(info: ResourceInfo, meta: Json, errs: FieldError[]): void {
  const name = str(meta.name) ?? "";
  if (name === "") {
    errs.push(fieldError.required("metadata.name", "name or generateName is required"));
  } else {
    for (const m of nameRule(info)(name)) errs.push(fieldError.invalid("metadata.name", name, m));
  }
  const labels = (meta.labels ?? {}) as Record<string, unknown>;
  for (const [k, v] of Object.entries(labels)) {
    for (const m of isQualifiedName(k)) errs.push(fieldError.invalid("metadata.labels", k, m));
    if (typeof v === "string") {
      for (const m of isValidLabelValue(v)) errs.push(fieldError.invalid("metadata.labels", v, m));
    }
  }
  const annotations = (meta.annotations ?? {}) as Record<string, unknown>;
  let size = 0;
  for (const [k, v] of Object.entries(annotations)) {
    for (const m of isQualifiedName(k.toLowerCase())) {
      errs.push(fieldError.invalid("metadata.annotations", k, m));
    }
    size += k.length + (typeof v === "string" ? v.length : 0);
  }
  if (size > 256 * 1024) errs.push(fieldError.tooLong("metadata.annotations", 256 * 1024));
  const owners = meta.ownerReferences;
  if (Array.isArray(owners)) {
    owners.forEach((o: Json, i) => {
      const f = `metadata.ownerReferences[${i}]`;
      if (!str(o.apiVersion))
        errs.push(
          fieldError.invalid(`${f}.apiVersion`, o.apiVersion ?? "", "version must not be empty"),
        );
      if (!str(o.kind))
        errs.push(fieldError.invalid(`${f}.kind`, o.kind ?? "", "kind must not be empty"));
      if (!str(o.name))
        errs.push(fieldError.invalid(`${f}.name`, o.name ?? "", "name must not be empty"));
      if (!str(o.uid))
        errs.push(fieldError.invalid(`${f}.uid`, o.uid ?? "", "uid must not be empty"));
    });
    if (owners.filter((o: Json) => o.controller === true).length > 1) {
      errs.push(
        fieldError.invalid(
          "metadata.ownerReferences",
          owners,
          "Only one reference can have Controller set to true",
        ),
      );
    }
  }
}

/** Checks the keys of data/binaryData and returns the decoded size of the values. */
function validateDataKeys(obj: Json, field: "data" | "binaryData", errs: FieldError[]): number {
  let size = 0;
  const data = (obj[field] ?? {}) as Record<string, unknown>;
  for (const [k, v] of Object.entries(data)) {
    for (const m of isConfigMapKey(k)) errs.push(fieldError.invalid(`${field}[${k}]`, k, m));
    size +=
      typeof v === "string"
        ? field === "binaryData" || obj.kind === "Secret"
          ? Buffer.from(v, "base64").length
          : v.length
        : 0;
  }
  return size;
}

const TAINT_EFFECTS = ["NoSchedule", "PreferNoSchedule", "NoExecute"];
const ROLE_REF_GROUP = "rbac.authorization.k8s.io";

function validateRules(rules: unknown, namespaced: boolean, errs: FieldError[]): void {
  if (!Array.isArray(rules)) return;
  rules.forEach((r: Json, i) => {
    const f = `rules[${i}]`;
    const verbs = (r.verbs ?? []) as unknown[];
    if (verbs.length === 0)
      errs.push(fieldError.required(`${f}.verbs`, "verbs must contain at least one value"));
    const urls = (r.nonResourceURLs ?? []) as unknown[];
    const resources = (r.resources ?? []) as unknown[];
    if (urls.length > 0) {
      if (namespaced) {
        errs.push(
          fieldError.invalid(
            `${f}.nonResourceURLs`,
            urls,
            "namespaced rules cannot apply to non-resource URLs",
          ),
        );
      }
      if (resources.length > 0 || ((r.apiGroups ?? []) as unknown[]).length > 0) {
        errs.push(
          fieldError.invalid(
            `${f}.nonResourceURLs`,
            urls,
            "rules cannot apply to both regular resources and non-resource URLs",
          ),
        );
      }
      return;
    }
    if (((r.apiGroups ?? []) as unknown[]).length === 0) {
      errs.push(
        fieldError.required(`${f}.apiGroups`, "resource rules must supply at least one api group"),
      );
    }
    if (resources.length === 0) {
      errs.push(
        fieldError.required(`${f}.resources`, "resource rules must supply at least one resource"),
      );
    }
  });
}

function validateBinding(obj: Json, cluster: boolean, errs: FieldError[]): void {
  const ref = (obj.roleRef ?? {}) as Json;
  const allowed = cluster ? ["ClusterRole"] : ["Role", "ClusterRole"];
  if (!allowed.includes(str(ref.kind) ?? "")) {
    errs.push(fieldError.notSupported("roleRef.kind", ref.kind ?? "", allowed));
  }
  if (ref.apiGroup !== ROLE_REF_GROUP) {
    errs.push(fieldError.notSupported("roleRef.apiGroup", ref.apiGroup ?? "", [ROLE_REF_GROUP]));
  }
  if (!str(ref.name)) errs.push(fieldError.required("roleRef.name", ""));
  const subjects = (obj.subjects ?? []) as Json[];
  subjects.forEach((s, i) => {
    const f = `subjects[${i}]`;
    if (!str(s.name)) errs.push(fieldError.required(`${f}.name`, ""));
    switch (s.kind) {
      case "ServiceAccount":
        if (s.apiGroup) errs.push(fieldError.notSupported(`${f}.apiGroup`, s.apiGroup, [""]));
        if (cluster && !str(s.namespace)) errs.push(fieldError.required(`${f}.namespace`, ""));
        break;
      case "User":
      case "Group":
        if (s.apiGroup !== ROLE_REF_GROUP) {
          errs.push(fieldError.notSupported(`${f}.apiGroup`, s.apiGroup ?? "", [ROLE_REF_GROUP]));
        }
        break;
      default:
        errs.push(
          fieldError.notSupported(`${f}.kind`, s.kind ?? "", ["ServiceAccount", "User", "Group"]),
        );
    }
  });
}

const CSR_USAGES = [
  "signing",
  "digital signature",
  "content commitment",
  "key encipherment",
  "key agreement",
  "data encipherment",
  "cert sign",
  "crl sign",
  "encipher only",
  "decipher only",
  "any",
  "server auth",
  "client auth",
  "code signing",
  "email protection",
  "s/mime",
  "ipsec end system",
  "ipsec tunnel",
  "ipsec user",
  "timestamping",
  "ocsp signing",
  "microsoft sgc",
  "netscape sgc",
];

function validateKindSpecific(info: ResourceInfo, obj: Json, errs: FieldError[]): void {
  switch (info.kind) {
    case "ConfigMap": {
      const size = validateDataKeys(obj, "data", errs) + validateDataKeys(obj, "binaryData", errs);
      const bin = (obj.binaryData ?? {}) as Json;
      for (const k of Object.keys(obj.data ?? {})) {
        if (k in bin)
          errs.push(fieldError.invalid(`data[${k}]`, k, "duplicate of key present in binaryData"));
      }
      if (size > 1024 * 1024) errs.push(fieldError.tooLong("data", 1024 * 1024));
      break;
    }
    case "Secret": {
      const size = validateDataKeys(obj, "data", errs);
      if (size > 1024 * 1024) errs.push(fieldError.tooLong("data", 1024 * 1024));
      const data = (obj.data ?? {}) as Json;
      // k8s: pkg/apis/core/validation/validation.go ValidateSecret (kubernetes.io/tls)
      if (obj.type === "kubernetes.io/tls") {
        for (const k of ["tls.crt", "tls.key"])
          if (!(k in data)) errs.push(fieldError.required(`data[${k}]`, ""));
      }
      break;
    }
    case "Node": {
      const taints = ((obj.spec as Json | undefined)?.taints ?? []) as Json[];
      const seen = new Set<string>();
      taints.forEach((t, i) => {
        const f = `spec.taints[${i}]`;
        const key = str(t.key) ?? "";
        for (const m of isQualifiedName(key)) errs.push(fieldError.invalid(`${f}.key`, key, m));
        if (typeof t.value === "string") {
          for (const m of isValidLabelValue(t.value))
            errs.push(fieldError.invalid(`${f}.value`, t.value, m));
        }
        if (!TAINT_EFFECTS.includes(str(t.effect) ?? "")) {
          if (!t.effect) errs.push(fieldError.required(`${f}.effect`, ""));
          else errs.push(fieldError.notSupported(`${f}.effect`, t.effect, TAINT_EFFECTS));
        }
        const id = `${key}:${String(t.effect)}`;
        if (seen.has(id)) {
          errs.push(
            fieldError.invalid(`spec.taints`, t, "taints must be unique by key and effect pair"),
          );
        }
        seen.add(id);
      });
      break;
    }
    case "Role":
      validateRules(obj.rules, true, errs);
      break;
    case "ClusterRole":
      validateRules(obj.rules, false, errs);
      break;
    case "RoleBinding":
      validateBinding(obj, false, errs);
      break;
    case "ClusterRoleBinding":
      validateBinding(obj, true, errs);
      break;
    case "CustomResourceDefinition":
      if (!info.crd) validateCrd(obj, errs);
      break;
    case "CertificateSigningRequest": {
      const spec = (obj.spec ?? {}) as Json;
      const request = str(spec.request);
      if (!request) errs.push(fieldError.required("spec.request", ""));
      else {
        try {
          parseCSR(Buffer.from(request, "base64").toString("utf8"));
        } catch (e) {
          errs.push(fieldError.invalid("spec.request", "[]byte{...}", (e as Error).message));
        }
      }
      if (!str(spec.signerName)) errs.push(fieldError.required("spec.signerName", ""));
      const usages = (spec.usages ?? []) as unknown[];
      if (usages.length === 0) errs.push(fieldError.required("spec.usages", ""));
      usages.forEach((u, i) => {
        if (!CSR_USAGES.includes(u as string))
          errs.push(fieldError.notSupported(`spec.usages[${i}]`, u, CSR_USAGES));
      });
      const cert = str(((obj.status ?? {}) as Json).certificate);
      if (cert) {
        try {
          new X509Certificate(Buffer.from(cert, "base64"));
        } catch {
          errs.push(
            fieldError.invalid(
              "status.certificate",
              "<certificate data>",
              "must contain at least one CERTIFICATE PEM block",
            ),
          );
        }
      }
      break;
    }
  }
}

/** Validates an object about to be created (or the result of an update). */
export function validateObject(info: ResourceInfo, obj: Json): void {
  const errs: FieldError[] = [];
  const meta = (obj.metadata ?? {}) as Json;
  validateMeta(info, meta, errs);
  validateKindSpecific(info, obj, errs);
  if (errs.length > 0) throw invalid(info.group, info.kind, str(meta.name) ?? "", errs);
}

/** The immutable parts of an update. k8s: objectmeta.go ValidateObjectMetaUpdate and kind rules. */
export function validateUpdate(info: ResourceInfo, next: Json, prev: Json): void {
  const errs: FieldError[] = [];
  const nm = (next.metadata ?? {}) as Json;
  const pm = (prev.metadata ?? {}) as Json;
  if (nm.uid !== undefined && nm.uid !== "" && nm.uid !== pm.uid) {
    errs.push(fieldError.invalid("metadata.uid", nm.uid, "field is immutable"));
  }
  if (info.kind === "Secret" && (next.type ?? "Opaque") !== (prev.type ?? "Opaque")) {
    errs.push(fieldError.invalid("type", next.type, "field is immutable"));
  }
  if ((info.kind === "ConfigMap" || info.kind === "Secret") && prev.immutable === true) {
    const same =
      JSON.stringify([next.data, next.binaryData]) === JSON.stringify([prev.data, prev.binaryData]);
    if (!same || next.immutable !== true) {
      errs.push(fieldError.forbidden("data", "field is immutable when `immutable` is set"));
    }
  }
  if (
    (info.kind === "RoleBinding" || info.kind === "ClusterRoleBinding") &&
    JSON.stringify(next.roleRef) !== JSON.stringify(prev.roleRef)
  ) {
    errs.push(fieldError.invalid("roleRef", next.roleRef, "cannot change roleRef"));
  }
  if (errs.length > 0) throw invalid(info.group, info.kind, str(nm.name) ?? "", errs);
}
