import type { Document } from 'bson';
import { dottedOf, noteAmbiguity, type DescPart } from './disambiguate';
import { cloneDeep, isDocument } from '../bson/paths';
import type { UpdateDescription } from '../oplog/oplog-entry';

/**
 * mongod's v2 log builder (update/v2_log_builder.cpp) for modifier updates: each update node
 * logs what it touched (logUpdatedField / logCreatedField / logDeletedField) into a tree that
 * becomes the `$v: 2` oplog diff, and change streams read updateDescription back from that
 * diff (pipeline/change_stream_document_diff_parser.cpp).
 *
 * Tree shape, as in mongod: a document level keeps deletes, updates, inserts and sub-diffs,
 * each in the order they were logged; an array level keeps its children by index. A path
 * component followed by an array index becomes an array level; a component at or after the
 * first created one becomes an inserted document; anything else a document sub-diff.
 *
 * Reading back (the change-stream parser): per document level, updatedFields gets the
 * updates then the inserts, removedFields the deletes, then each sub-diff recurses; an array
 * level reports its children by ascending index.
 */

/** One component of a concrete update path: a field name or an array index. */
export interface LogPathPart {
  name: string;
  isIndex: boolean;
}

type Node = ValueNode | DeleteNode | DocNode | InsertDocNode | ArrayNode;

interface ValueNode {
  kind: 'update' | 'insert';
  value: unknown;
}

interface DeleteNode {
  kind: 'delete';
}

interface DocNode {
  kind: 'doc';
  children: Map<string, Node>;
  deletes: string[];
  updates: string[];
  inserts: string[];
  subDiffs: string[];
}

/** A document created by this update: serialised whole, its fields in logged order. */
interface InsertDocNode {
  kind: 'insertDoc';
  children: Map<string, Node>;
}

interface ArrayNode {
  kind: 'array';
  children: Map<number, Node>;
}

type Internal = DocNode | InsertDocNode | ArrayNode;

const newDocNode = (): DocNode => ({
  kind: 'doc',
  children: new Map(),
  deletes: [],
  updates: [],
  inserts: [],
  subDiffs: [],
});

export class UpdateLog {
  private readonly root: DocNode = newDocNode();

  /** An existing field (or array element) got a new value. */
  logUpdated(path: LogPathPart[], value: unknown): void {
    this.add(path, { kind: 'update', value: cloneDeep(value) }, undefined);
  }

  /** A field was created; components from `firstNew` on did not exist before. */
  logCreated(path: LogPathPart[], firstNew: number, value: unknown): void {
    this.add(path, { kind: 'insert', value: cloneDeep(value) }, firstNew);
  }

  /** A field was removed ($unset of a field, the source of a $rename). */
  logDeleted(path: LogPathPart[]): void {
    this.add(path, { kind: 'delete' }, undefined);
  }

  get isEmpty(): boolean {
    return this.root.children.size === 0;
  }

  private add(path: LogPathPart[], leaf: Node, firstNew: number | undefined): void {
    let node: Internal = this.root;
    for (let i = 0; i < path.length - 1; i++) {
      const existing = getChild(node, path[i].name);
      if (existing && isInternal(existing)) {
        node = existing;
        continue;
      }
      if (existing) return; // unreachable: conflicting paths are rejected before applying
      const isNew = firstNew !== undefined && i >= firstNew;
      const child: Internal = path[i + 1].isIndex
        ? { kind: 'array', children: new Map() }
        : isNew
          ? { kind: 'insertDoc', children: new Map() }
          : newDocNode();
      addChild(node, path[i].name, child);
      node = child;
    }
    addChild(node, path[path.length - 1].name, leaf);
  }

  /** The change-stream updateDescription of the logged diff. */
  toDescription(): UpdateDescription {
    const out: UpdateDescription = { updatedFields: {}, removedFields: [], truncatedArrays: [] };
    readDoc(this.root, [], out);
    return out;
  }
}

function isInternal(node: Node): node is Internal {
  return node.kind === 'doc' || node.kind === 'insertDoc' || node.kind === 'array';
}

function getChild(node: Internal, name: string): Node | undefined {
  return node.kind === 'array' ? node.children.get(Number(name)) : node.children.get(name);
}

function addChild(node: Internal, name: string, child: Node): void {
  if (node.kind === 'array') {
    node.children.set(Number(name), child);
    return;
  }
  if (node.children.has(name)) return; // unreachable: one node per path
  node.children.set(name, child);
  if (node.kind === 'insertDoc') return;
  const list =
    child.kind === 'array' || child.kind === 'doc'
      ? node.subDiffs
      : child.kind === 'insert' || child.kind === 'insertDoc'
        ? node.inserts
        : child.kind === 'delete'
          ? node.deletes
          : node.updates;
  list.push(name);
}

/** The value an inserted document serialises to. */
function materialize(node: Node): unknown {
  if (node.kind === 'update' || node.kind === 'insert') return node.value;
  const out: Document = {};
  if (node.kind === 'insertDoc') {
    for (const [k, child] of node.children) out[k] = materialize(child);
  }
  return out;
}

function readDoc(node: DocNode, at: DescPart[], out: UpdateDescription): void {
  const field = (k: string): DescPart[] => [...at, { name: k, isIndex: false }];
  for (const k of node.updates) put(out, field(k), valueOf(node.children.get(k)!));
  for (const k of node.inserts) put(out, field(k), materialize(node.children.get(k)!));
  for (const k of node.deletes) {
    out.removedFields.push(dottedOf(field(k)));
    noteAmbiguity(out, dottedOf(field(k)), field(k));
  }
  for (const k of node.subDiffs) readSub(node.children.get(k)!, field(k), out);
}

function readSub(node: Node, at: DescPart[], out: UpdateDescription): void {
  if (node.kind === 'doc') return readDoc(node, at, out);
  if (node.kind !== 'array') return;
  const indexes = [...node.children.keys()].sort((a, b) => a - b);
  for (const i of indexes) {
    const child = node.children.get(i)!;
    const parts = [...at, { name: String(i), isIndex: true }];
    if (child.kind === 'doc' || child.kind === 'array') readSub(child, parts, out);
    else put(out, parts, materialize(child));
  }
}

function put(out: UpdateDescription, parts: DescPart[], value: unknown): void {
  const dotted = dottedOf(parts);
  out.updatedFields[dotted] = value;
  noteAmbiguity(out, dotted, parts);
}

function valueOf(node: Node): unknown {
  return node.kind === 'update' || node.kind === 'insert' ? node.value : undefined;
}

/** Path components typed as mongod's RuntimeUpdatePath: an index when the parent is an array. */
export function typedPath(doc: Document, path: string[]): LogPathPart[] {
  const out: LogPathPart[] = [];
  let cur: unknown = doc;
  for (const name of path) {
    const isIndex = Array.isArray(cur);
    out.push({ name, isIndex });
    if (isDocument(cur))
      cur = Object.prototype.hasOwnProperty.call(cur, name) ? cur[name] : undefined;
    else if (Array.isArray(cur) && /^\d+$/.test(name)) cur = cur[Number(name)];
    else cur = undefined;
  }
  return out;
}
