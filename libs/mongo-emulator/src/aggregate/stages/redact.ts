import type { Document } from 'bson';
import { CommandError } from '../../errors';
import { makeContext } from '../expressions';
import { isDocument } from '../operators/types';
import type { StageBuilder } from './types';

const KEEP = 'keep';
const PRUNE = 'prune';
const DESCEND = 'descend';

export const redact: StageBuilder = (spec, ctx) => {
  const vars = { ...ctx.vars, KEEP, PRUNE, DESCEND };
  // $$CURRENT is rebound to each sub-document while $$ROOT stays the top-level document.
  const visit = (root: Document, current: Document): Document | undefined => {
    const decision = makeContext(root, { ...vars, ROOT: root, CURRENT: current }).evaluate(spec);
    if (decision === KEEP) return current;
    if (decision === PRUNE) return undefined;
    if (decision !== DESCEND) {
      throw new CommandError(
        17053,
        `$redact's expression should not return anything aside from the variables $$KEEP, $$DESCEND, and $$PRUNE, but returned ${JSON.stringify(decision)}`,
      );
    }
    const out: Document = {};
    for (const [k, v] of Object.entries(current)) {
      if (isDocument(v)) {
        const r = visit(root, v);
        if (r !== undefined) out[k] = r;
      } else if (Array.isArray(v)) {
        out[k] = redactArray(root, v);
      } else {
        out[k] = v;
      }
    }
    return out;
  };
  const redactArray = (root: Document, arr: unknown[]): unknown[] => {
    const out: unknown[] = [];
    for (const el of arr) {
      if (isDocument(el)) {
        const r = visit(root, el);
        if (r !== undefined) out.push(r);
      } else if (Array.isArray(el)) out.push(redactArray(root, el));
      else out.push(el);
    }
    return out;
  };
  return function* (input) {
    for (const doc of input) {
      const r = visit(doc, doc);
      if (r !== undefined) yield r;
    }
  };
};
