import type { Document } from 'bson';
import { cloneDeep, isDocument } from '../bson/paths';
import { CommandError } from '../errors';
import { evaluateExpression } from './expression-bridge';
import { compileFilter } from './matcher';
import { positionalIndex } from './positional';
import { isLeaf, parseProjection, type ProjLeaf, type ProjNode } from './projection-spec';

/**
 * Compiles a find projection. Inclusion keeps the document's field order, then appends
 * computed and $elemMatch fields in specification order (mongod 4.4+); exclusion copies
 * everything else. `filter` feeds the positional `a.$` form.
 */
export function compileProjection(
  spec: Document,
  filter: Document = {},
): (doc: Document) => Document {
  if (Object.keys(spec).length === 0) return (doc) => cloneDeep(doc);
  const parsed = parseProjection(spec);
  const elemMatchers = new Map<ProjLeaf, (d: Document) => boolean>();
  collectElemMatch(parsed.root, elemMatchers);
  return (doc) => {
    const ctx = { root: doc, filter, elemMatchers };
    return parsed.mode === 'inclusion'
      ? include(doc, parsed.root, ctx, [])
      : exclude(doc, parsed.root);
  };
}

interface Ctx {
  root: Document;
  filter: Document;
  elemMatchers: Map<ProjLeaf, (d: Document) => boolean>;
}

function collectElemMatch(node: ProjNode, out: Map<ProjLeaf, (d: Document) => boolean>): void {
  for (const child of node.children.values()) {
    if (!isLeaf(child)) collectElemMatch(child, out);
    else if (child.kind === 'elemMatch') out.set(child, compileFilter(child.filter));
  }
}

function include(doc: Document, node: ProjNode, ctx: Ctx, path: string[]): Document {
  const out: Document = {};
  for (const key of Object.keys(doc)) {
    const rule = node.children.get(key);
    if (!rule) continue;
    const value = doc[key];
    if (!isLeaf(rule)) {
      const sub = includeValue(value, rule, ctx, [...path, key]);
      if (sub !== undefined) out[key] = sub;
    } else if (rule.kind === 'include') out[key] = cloneDeep(value);
    else if (rule.kind === 'slice') out[key] = slice(value, rule);
    else if (rule.kind === 'positional') {
      if (!Array.isArray(value)) continue;
      const i = positionalIndex(ctx.root, ctx.filter, [...path, key]);
      out[key] = [cloneDeep(value[i])];
    }
  }
  // Computed and $elemMatch fields follow the document's own fields, in spec order.
  for (const [key, rule] of node.children) {
    if (!isLeaf(rule)) continue;
    if (rule.kind === 'computed') out[key] = evaluateExpression(rule.expr, ctx.root);
    if (rule.kind === 'elemMatch' && Array.isArray(doc[key])) {
      const match = ctx.elemMatchers.get(rule)!;
      const hit = (doc[key] as unknown[]).find((e) => isDocument(e) && match(e));
      if (hit !== undefined) out[key] = [cloneDeep(hit)];
    }
  }
  return out;
}

/** Inclusion below a path: documents recurse; arrays keep only documents and arrays. */
function includeValue(value: unknown, node: ProjNode, ctx: Ctx, path: string[]): unknown {
  if (isDocument(value)) return include(value, node, ctx, path);
  if (Array.isArray(value)) {
    return value
      .filter((v) => isDocument(v) || Array.isArray(v))
      .map((v) => includeValue(v, node, ctx, path));
  }
  return undefined;
}

function exclude(doc: Document, node: ProjNode): Document {
  const out: Document = {};
  for (const key of Object.keys(doc)) {
    const rule = node.children.get(key);
    const value = doc[key];
    if (!rule) out[key] = cloneDeep(value);
    else if (!isLeaf(rule)) out[key] = excludeValue(value, rule);
    else if (rule.kind === 'slice') out[key] = slice(value, rule);
    else if (rule.kind !== 'exclude') {
      throw new CommandError(
        31252,
        'Cannot use expression other than $meta in exclusion projection',
      );
    }
  }
  return out;
}

function excludeValue(value: unknown, node: ProjNode): unknown {
  if (isDocument(value)) return exclude(value, node);
  if (Array.isArray(value)) return value.map((v) => excludeValue(v, node));
  return cloneDeep(value);
}

function slice(value: unknown, rule: Extract<ProjLeaf, { kind: 'slice' }>): unknown {
  if (!Array.isArray(value)) return cloneDeep(value);
  let { skip } = rule;
  const { limit } = rule;
  if (skip === undefined) {
    return cloneDeep(
      limit >= 0 ? value.slice(0, limit) : value.slice(Math.max(0, value.length + limit)),
    );
  }
  if (skip < 0) skip = Math.max(0, value.length + skip);
  return cloneDeep(value.slice(skip, skip + limit));
}
