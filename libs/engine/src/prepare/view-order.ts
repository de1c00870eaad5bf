import type { NamespaceRecord } from '../ports/job-store';

/**
 * Views must be created after the namespaces they read from when those are views too (a view on
 * a view). Depth-first order over `viewOn`; cycles cannot exist on a valid source.
 */
export function orderViews(views: NamespaceRecord[]): NamespaceRecord[] {
  const byKey = new Map(views.map((v) => [`${v.database}.${v.collection}`, v]));
  const ordered: NamespaceRecord[] = [];
  const seen = new Set<string>();
  const visit = (view: NamespaceRecord): void => {
    const key = `${view.database}.${view.collection}`;
    if (seen.has(key)) return;
    seen.add(key);
    const parent = byKey.get(`${view.database}.${String(view.options.viewOn)}`);
    if (parent) visit(parent);
    ordered.push(view);
  };
  views.forEach(visit);
  return ordered;
}
