import type { Document } from 'bson';
import { CommandError } from '../../errors';
import { makeContext } from '../expressions';
import { asDouble, numericKind } from '../operators/numeric';
import { isDocument, typeName } from '../operators/types';
import type { StageBuilder, StageContext } from './types';

/**
 * Projection trees for $project/$addFields/$unset. Dotted keys and nested objects build the
 * same tree; an object whose first key starts with '$' is an expression, not a subtree.
 */
type Node =
  | { kind: 'include' }
  | { kind: 'exclude' }
  | { kind: 'expr'; expr: unknown }
  | { kind: 'tree'; children: Map<string, Node> };

type Tree = Extract<Node, { kind: 'tree' }>;

const newTree = (): Tree => ({ kind: 'tree', children: new Map() });

function isExpressionObject(v: unknown): boolean {
  return isDocument(v) && Object.keys(v).length > 0 && Object.keys(v)[0].startsWith('$');
}

function validateFieldName(stage: string, name: string): void {
  if (name === '')
    throw new CommandError(
      40352,
      `Invalid ${stage} :: caused by :: FieldPath cannot be constructed with empty string`,
    );
  if (name.startsWith('$')) {
    throw new CommandError(
      16410,
      `Invalid ${stage} :: caused by :: FieldPath field names may not start with '$'. Consider using $getField or $setField.`,
    );
  }
}

function insert(stage: string, tree: Tree, path: string[], node: Node): void {
  let cur = tree;
  for (let i = 0; i < path.length - 1; i++) {
    validateFieldName(stage, path[i]);
    let next = cur.children.get(path[i]);
    if (!next) {
      next = newTree();
      cur.children.set(path[i], next);
    } else if (next.kind !== 'tree') {
      throw new CommandError(
        31250,
        `Invalid ${stage} :: caused by :: Path collision at ${path.join('.')}`,
      );
    }
    cur = next;
  }
  const last = path[path.length - 1];
  validateFieldName(stage, last);
  if (cur.children.has(last)) {
    throw new CommandError(
      31250,
      `Invalid ${stage} :: caused by :: Path collision at ${path.join('.')}`,
    );
  }
  cur.children.set(last, node);
}

/** Parses a $project spec; `addFields` treats every value as an expression. */
function parseSpec(
  stage: string,
  spec: Document,
  tree: Tree,
  prefix: string[],
  addFields: boolean,
): void {
  for (const [key, value] of Object.entries(spec)) {
    const path = [...prefix, ...key.split('.')];
    if (!addFields && (typeof value === 'boolean' || numericKind(value))) {
      const on = typeof value === 'boolean' ? value : asDouble(value) !== 0;
      insert(stage, tree, path, on ? { kind: 'include' } : { kind: 'exclude' });
    } else if (isDocument(value) && !isExpressionObject(value) && Object.keys(value).length > 0) {
      parseSpec(stage, value, tree, path, addFields);
    } else if (isDocument(value) && Object.keys(value).length === 0 && !addFields) {
      throw new CommandError(
        51270,
        `Invalid ${stage} :: caused by :: An empty sub-projection is not a valid value. Found empty object at path`,
      );
    } else {
      insert(stage, tree, path, { kind: 'expr', expr: value });
    }
  }
}

/** Inclusion or exclusion, as MongoDB decides it: _id alone never decides. */
function modeOf(stage: string, tree: Tree): 'inclusion' | 'exclusion' {
  let mode: 'inclusion' | 'exclusion' | undefined;
  const visit = (t: Tree, top: boolean, path: string): void => {
    for (const [k, n] of t.children) {
      const p = path ? `${path}.${k}` : k;
      if (n.kind === 'tree') {
        visit(n, false, p);
        continue;
      }
      if (top && k === '_id' && n.kind !== 'expr') continue;
      const m = n.kind === 'exclude' ? 'exclusion' : 'inclusion';
      if (mode && mode !== m) {
        throw m === 'exclusion'
          ? new CommandError(
              31254,
              `Invalid ${stage} :: caused by :: Cannot do exclusion on field ${p} in inclusion projection`,
            )
          : new CommandError(
              31253,
              `Invalid ${stage} :: caused by :: Cannot do inclusion on field ${p} in exclusion projection`,
            );
      }
      mode = m;
    }
  };
  visit(tree, true, '');
  if (!mode) {
    const id = tree.children.get('_id');
    return id && id.kind === 'exclude' ? 'exclusion' : 'inclusion';
  }
  return mode;
}

type Eval = (expr: unknown) => unknown;

function applyInclusion(tree: Tree, doc: Document, ev: Eval, top: boolean): Document {
  const out: Document = {};
  // Included and subtree fields keep input order.
  for (const key of Object.keys(doc)) {
    const node = tree.children.get(key);
    if (!node) continue;
    if (node.kind === 'include') out[key] = doc[key];
    else if (node.kind === 'tree') {
      const v = applyInclusionValue(node, doc[key], ev);
      if (v !== undefined) out[key] = v;
    }
  }
  if (top && !tree.children.has('_id') && '_id' in doc) {
    const rest = { ...out };
    delete rest._id;
    return applyExpressions(tree, { _id: doc._id, ...rest }, ev);
  }
  return applyExpressions(tree, out, ev);
}

function applyInclusionValue(node: Tree, value: unknown, ev: Eval): unknown {
  if (isDocument(value)) return applyInclusion(node, value, ev, false);
  if (Array.isArray(value)) {
    // Scalars inside arrays are dropped by an inclusion subtree; arrays recurse.
    const out: unknown[] = [];
    for (const el of value) {
      if (isDocument(el) || Array.isArray(el)) out.push(applyInclusionValue(node, el, ev));
    }
    return out;
  }
  // A scalar under a subtree disappears unless the subtree computes something.
  return hasExpressions(node) ? applyExpressions(node, {}, ev) : undefined;
}

function hasExpressions(t: Tree): boolean {
  for (const n of t.children.values()) {
    if (n.kind === 'expr' || (n.kind === 'tree' && hasExpressions(n))) return true;
  }
  return false;
}

/** Computed fields: replace in place when present, otherwise append in spec order. */
function applyExpressions(tree: Tree, out: Document, ev: Eval): Document {
  for (const [key, node] of tree.children) {
    if (node.kind === 'expr') {
      const v = ev(node.expr);
      if (v === undefined) delete out[key];
      else out[key] = v;
    } else if (node.kind === 'tree' && hasExpressions(node) && !(key in out)) {
      out[key] = applyExpressions(node, {}, ev);
    }
  }
  return out;
}

function applyExclusion(tree: Tree, doc: Document): Document {
  const out: Document = {};
  for (const key of Object.keys(doc)) {
    const node = tree.children.get(key);
    if (!node) out[key] = doc[key];
    else if (node.kind === 'tree') out[key] = applyExclusionValue(node, doc[key]);
  }
  return out;
}

function applyExclusionValue(node: Tree, value: unknown): unknown {
  if (isDocument(value)) return applyExclusion(node, value);
  if (Array.isArray(value)) return value.map((el) => applyExclusionValue(node, el));
  return value;
}

/** $addFields: set computed values, descending into documents and arrays of documents. */
function applyAddFields(tree: Tree, doc: Document, ev: Eval): Document {
  const out: Document = { ...doc };
  for (const [key, node] of tree.children) {
    if (node.kind === 'expr') {
      const v = ev(node.expr);
      if (v === undefined) delete out[key];
      else out[key] = v;
    } else if (node.kind === 'tree') {
      out[key] = addFieldsValue(node, out[key], ev);
    }
  }
  return out;
}

function addFieldsValue(node: Tree, value: unknown, ev: Eval): unknown {
  if (isDocument(value)) return applyAddFields(node, value, ev);
  if (Array.isArray(value)) return value.map((el) => addFieldsValue(node, el, ev));
  return applyAddFields(node, {}, ev);
}

function perDocument(ctx: StageContext, apply: (doc: Document, ev: Eval) => Document) {
  return function* (input: Iterable<Document>): Iterable<Document> {
    for (const doc of input) {
      const ec = makeContext(doc, { ...ctx.vars, ROOT: doc, CURRENT: doc });
      yield apply(doc, (e) => ec.evaluate(e));
    }
  };
}

export const project: StageBuilder = (spec, ctx) => {
  if (!isDocument(spec)) {
    throw new CommandError(15969, `$project specification must be an object`);
  }
  if (Object.keys(spec).length === 0) {
    throw new CommandError(
      51272,
      'Invalid $project :: caused by :: projection specification must have at least one field',
    );
  }
  const tree = newTree();
  parseSpec('$project', spec, tree, [], false);
  if (modeOf('$project', tree) === 'exclusion')
    return perDocument(ctx, (doc) => applyExclusion(tree, doc));
  return perDocument(ctx, (doc, ev) => applyInclusion(tree, doc, ev, true));
};

export const addFields =
  (stage: '$addFields' | '$set'): StageBuilder =>
  (spec, ctx) => {
    if (!isDocument(spec)) {
      throw new CommandError(
        40272,
        `${stage} specification stage must be an object, got ${typeName(spec)}`,
      );
    }
    const tree = newTree();
    parseSpec(stage, spec, tree, [], true);
    return perDocument(ctx, (doc, ev) => applyAddFields(tree, doc, ev));
  };

export const unset: StageBuilder = (spec, ctx) => {
  const fields = typeof spec === 'string' ? [spec] : spec;
  if (!Array.isArray(fields) || fields.length === 0 || fields.some((f) => typeof f !== 'string')) {
    throw new CommandError(
      31002,
      '$unset specification must be a string or an array containing only string values',
    );
  }
  const tree = newTree();
  for (const f of fields as string[]) insert('$unset', tree, f.split('.'), { kind: 'exclude' });
  return perDocument(ctx, (doc) => applyExclusion(tree, doc));
};

function replaceWith(ctx: StageContext, expr: unknown) {
  return perDocument(ctx, (doc, ev) => {
    const v = ev(expr);
    if (!isDocument(v)) {
      throw new CommandError(
        40228,
        `'newRoot' expression must evaluate to an object, but resulting value was: ${v === undefined ? 'MISSING' : JSON.stringify(v)}. Type of resulting value: '${typeName(v)}'. Input document: ${JSON.stringify(doc)}`,
      );
    }
    return v;
  });
}

export const replaceRoot: StageBuilder = (spec, ctx) => {
  if (!isDocument(spec))
    throw new CommandError(40229, 'expected an object as specification for $replaceRoot stage');
  if (!('newRoot' in spec))
    throw new CommandError(40231, 'no newRoot specified for the $replaceRoot stage');
  for (const k of Object.keys(spec)) {
    if (k !== 'newRoot')
      throw new CommandError(40415, `BSON field '$replaceRoot.${k}' is an unknown field.`);
  }
  return replaceWith(ctx, spec.newRoot);
};

export const replaceWithStage: StageBuilder = (spec, ctx) => replaceWith(ctx, spec);
