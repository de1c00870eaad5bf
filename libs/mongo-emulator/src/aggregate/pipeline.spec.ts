import { Double, Int32, Long, type Document } from 'bson';
import { CommandError } from '../errors';
import { runPipeline } from './pipeline';
import { InMemoryPipelineEnv } from './testing/in-memory-env';

const i = (n: number) => new Int32(n);

function run(pipeline: Document[], input: Document[], env = new InMemoryPipelineEnv()): Document[] {
  return [...runPipeline(input, pipeline, env)];
}
const code = (fn: () => unknown): number => {
  try {
    fn();
  } catch (e) {
    return (e as CommandError).code;
  }
  return 0;
};

const sales = [
  { _id: 1, item: 'a', qty: i(2), price: new Double(10), tags: ['x', 'y'] },
  { _id: 2, item: 'b', qty: i(1), price: new Double(20), tags: [] },
  { _id: 3, item: 'a', qty: i(5), price: new Double(10) },
];

describe('validation', () => {
  it('uses MongoDB error codes', () => {
    expect(code(() => run([{ $foo: {} }], []))).toBe(40324);
    expect(code(() => run([{ $match: {}, $limit: 1 }], []))).toBe(40323);
    expect(code(() => run([{ $out: 'x' }, { $match: {} }], []))).toBe(40601);
    expect(code(() => run([{ $match: {} }, { $collStats: {} }], []))).toBe(40602);
    expect(code(() => run([{ $limit: 0 }], []))).toBe(15958);
    expect(code(() => run([{ $skip: -1 }], []))).toBe(15956);
    expect(code(() => run([{ $group: { n: { $sum: 1 } } }], []))).toBe(15955);
    expect(code(() => run([{ $project: { a: 1, b: 0 } }], []))).toBe(31254);
    expect(code(() => run([{ $facet: { f: [{ $out: 'x' }] } }], []))).toBe(40600);
  });
});

describe('streaming stages', () => {
  it('$match/$project/$limit stream lazily over an unbounded source', () => {
    function* forever() {
      for (let n = 0; ; n++) yield { _id: n, v: n % 3 };
    }
    const out = [
      ...runPipeline(
        forever(),
        [{ $match: { v: 1 } }, { $project: { v: 0 } }, { $limit: 3 }],
        new InMemoryPipelineEnv(),
      ),
    ];
    expect(out).toStrictEqual([{ _id: 1 }, { _id: 4 }, { _id: 7 }]);
  });
  it('$match supports $expr with let variables', () => {
    const env = new InMemoryPipelineEnv();
    env.variables = { min: i(2) };
    expect(
      run([{ $match: { $expr: { $gte: ['$qty', '$$min'] } } }], sales, env).map((d) => d._id),
    ).toStrictEqual([1, 3]);
  });
  it('$project inclusion keeps _id and input order, computes fields', () => {
    expect(
      run([{ $project: { total: { $multiply: ['$qty', '$price'] }, item: 1 } }], sales.slice(0, 1)),
    ).toStrictEqual([{ _id: 1, item: 'a', total: new Double(20) }]);
    expect(
      run([{ $project: { 'a.b': 1, _id: 0 } }], [{ a: [{ b: 1, c: 2 }, 5], z: 1 }]),
    ).toStrictEqual([{ a: [{ b: 1 }] }]);
  });
  it('$addFields/$set/$unset/$replaceRoot', () => {
    expect(
      run([{ $set: { 'm.n': 1, item: '$$REMOVE' } }], [{ _id: 1, item: 'a', m: { o: 2 } }]),
    ).toStrictEqual([{ _id: 1, m: { o: 2, n: 1 } }]);
    expect(run([{ $unset: ['tags', 'price'] }], sales.slice(1, 2))).toStrictEqual([
      { _id: 2, item: 'b', qty: i(1) },
    ]);
    expect(run([{ $replaceWith: { x: '$item' } }], sales.slice(0, 1))).toStrictEqual([{ x: 'a' }]);
    expect(code(() => run([{ $replaceRoot: { newRoot: '$item' } }], sales.slice(0, 1)))).toBe(
      40228,
    );
  });
  it('$skip, $count, $unwind', () => {
    expect(run([{ $skip: 2 }, { $count: 'n' }], sales)).toStrictEqual([{ n: i(1) }]);
    expect(run([{ $count: 'n' }], [])).toStrictEqual([]);
    expect(
      run(
        [{ $unwind: { path: '$tags', includeArrayIndex: 'ix', preserveNullAndEmptyArrays: true } }],
        sales,
      ),
    ).toStrictEqual([
      { ...sales[0], tags: 'x', ix: Long.fromNumber(0) },
      { ...sales[0], tags: 'y', ix: Long.fromNumber(1) },
      { _id: 2, item: 'b', qty: i(1), price: new Double(20), ix: null },
      { ...sales[2], ix: null },
    ]);
    expect(run([{ $unwind: '$tags' }], sales)).toHaveLength(2);
  });
});

describe('$group and friends', () => {
  it('accumulates with MongoDB result types', () => {
    const out = run(
      [
        {
          $group: {
            _id: '$item',
            n: { $sum: 1 },
            qty: { $sum: '$qty' },
            avg: { $avg: '$qty' },
            max: { $max: '$qty' },
            first: { $first: '$_id' },
            ids: { $push: '$_id' },
            set: { $addToSet: '$price' },
            c: { $count: {} },
            top: { $top: { sortBy: { qty: -1 }, output: '$_id' } },
          },
        },
        { $sort: { _id: 1 } },
      ],
      sales,
    );
    expect(out[0]).toStrictEqual({
      _id: 'a',
      n: i(2),
      qty: i(7),
      avg: new Double(3.5),
      max: i(5),
      first: 1,
      ids: [1, 3],
      set: [new Double(10)],
      c: i(2),
      top: 3,
    });
  });
  it('groups numerically equal keys together and null with missing', () => {
    const out = run(
      [{ $group: { _id: '$k', n: { $sum: 1 } } }],
      [{ k: i(1) }, { k: new Double(1) }, {}, { k: null }],
    );
    expect(out).toStrictEqual([
      { _id: i(1), n: i(2) },
      { _id: null, n: i(2) },
    ]);
  });
  it('$bucket, $bucketAuto, $sortByCount', () => {
    const docs = [1, 5, 12, 20, 30].map((n) => ({ v: i(n) }));
    expect(
      run([{ $bucket: { groupBy: '$v', boundaries: [0, 10, 20], default: 'other' } }], docs),
    ).toStrictEqual([
      { _id: 0, count: i(2) },
      { _id: 10, count: i(1) },
      { _id: 'other', count: i(2) },
    ]);
    const auto = run([{ $bucketAuto: { groupBy: '$v', buckets: 2 } }], docs);
    expect(auto).toStrictEqual([
      { _id: { min: i(1), max: i(20) }, count: i(3) },
      { _id: { min: i(20), max: i(30) }, count: i(2) },
    ]);
    expect(run([{ $sortByCount: '$item' }], sales)).toStrictEqual([
      { _id: 'a', count: i(2) },
      { _id: 'b', count: i(1) },
    ]);
  });
});

describe('multi-collection stages', () => {
  it('$lookup equality (arrays and missing) and pipeline forms', () => {
    const env = new InMemoryPipelineEnv().seed('inv', [
      { _id: 10, sku: 'a' },
      { _id: 11, sku: ['b', 'c'] },
      { _id: 12 },
    ]);
    const out = run(
      [{ $lookup: { from: 'inv', localField: 'k', foreignField: 'sku', as: 'm' } }],
      [{ k: 'c' }, { k: ['a', 'b'] }, {}],
      env,
    );
    expect(out.map((d) => d.m.map((x: Document) => x._id))).toStrictEqual([[11], [10, 11], [12]]);
    const piped = run(
      [
        {
          $lookup: {
            from: 'inv',
            let: { s: '$k' },
            pipeline: [{ $match: { $expr: { $eq: ['$sku', '$$s'] } } }, { $project: { _id: 1 } }],
            as: 'm',
          },
        },
      ],
      [{ k: 'a' }],
      env,
    );
    expect(piped[0].m).toStrictEqual([{ _id: 10 }]);
  });
  it('$unionWith adds another collection, run through its own pipeline, after the input', () => {
    const env = new InMemoryPipelineEnv()
      .seed('a2', [
        { _id: 2, v: i(2) },
        { _id: 1, v: new Long(1) },
      ])
      .seed('a3', [{ _id: 'x' }]);
    expect(run([{ $unionWith: 'a2' }], [{ _id: 0 }], env)).toStrictEqual([
      { _id: 0 },
      { _id: 2, v: i(2) },
      { _id: 1, v: new Long(1) },
    ]);
    const tagged = run(
      [
        { $replaceWith: { n: i(0), d: '$$ROOT' } },
        { $unionWith: { coll: 'a2', pipeline: [{ $replaceWith: { n: i(1), d: '$$ROOT' } }] } },
        { $unionWith: { coll: 'missing', pipeline: [{ $replaceWith: { n: i(2), d: '$$ROOT' } }] } },
        { $unionWith: { coll: 'a3', pipeline: [{ $replaceWith: { n: i(3), d: '$$ROOT' } }] } },
        { $sort: { n: 1, 'd._id': 1 } },
      ],
      [{ _id: 'in', f: new Double(1) }],
      env,
    );
    expect(tagged).toStrictEqual([
      { n: i(0), d: { _id: 'in', f: new Double(1) } },
      { n: i(1), d: { _id: 1, v: new Long(1) } },
      { n: i(1), d: { _id: 2, v: i(2) } },
      { n: i(3), d: { _id: 'x' } },
    ]);
    expect(
      run([{ $unionWith: { pipeline: [{ $documents: [{ z: i(1) }] }] } }], [], env),
    ).toStrictEqual([{ z: i(1) }]);
  });

  it("$unionWith's sub-pipeline source stages read the unioned collection", () => {
    // $indexStats/$collStats in the sub-pipeline describe `coll`, not the outer collection.
    const env = new InMemoryPipelineEnv('test', 'c')
      .seed('c', [{ _id: 1 }])
      .seed('d', [{ _id: 1 }, { _id: 2 }]);
    const tagged = (n: number, stage: Document) => [
      stage,
      { $replaceWith: { n: i(n), ns: '$ns', count: '$count', index: '$name' } },
    ];
    const out = run(
      [
        ...tagged(0, { $collStats: { count: {} } }),
        { $unionWith: { coll: 'd', pipeline: tagged(1, { $collStats: { count: {} } }) } },
        { $unionWith: { coll: 'd', pipeline: tagged(2, { $indexStats: {} }) } },
        { $unionWith: { coll: 'missing', pipeline: tagged(3, { $indexStats: {} }) } },
      ],
      [],
      env,
    );
    expect(out).toStrictEqual([
      { n: i(0), ns: 'test.c', count: 1 },
      { n: i(1), ns: 'test.d', count: 2 },
      { n: i(2), index: '_id_' },
    ]);
  });

  it('$unionWith refuses a bad specification and writing sub-pipelines', () => {
    expect(code(() => run([{ $unionWith: 1 }], []))).toBe(9);
    expect(code(() => run([{ $unionWith: { coll: 'a', as: 'x' } }], []))).toBe(40415);
    expect(code(() => run([{ $unionWith: { coll: 1 } }], []))).toBe(14);
    expect(code(() => run([{ $unionWith: { coll: 'a', pipeline: {} } }], []))).toBe(14);
    expect(code(() => run([{ $unionWith: { pipeline: [{ $match: {} }] } }], []))).toBe(9);
    expect(code(() => run([{ $unionWith: { coll: 'a', pipeline: [{ $out: 'b' }] } }], []))).toBe(
      31441,
    );
    expect(
      code(() => run([{ $unionWith: { coll: 'a', pipeline: [{ $merge: { into: 'b' } }] } }], [])),
    ).toBe(31441);
  });

  it('$facet runs each sub-pipeline over the same input', () => {
    expect(
      run(
        [
          {
            $facet: {
              n: [{ $count: 'c' }],
              a: [{ $match: { item: 'a' } }, { $project: { _id: 1 } }],
            },
          },
        ],
        sales,
      ),
    ).toStrictEqual([{ n: [{ c: i(3) }], a: [{ _id: 1 }, { _id: 3 }] }]);
  });
  it('$out replaces a collection and $merge upserts', () => {
    const env = new InMemoryPipelineEnv().seed('t', [{ _id: 1, old: true }, { _id: 9 }]);
    expect(run([{ $project: { item: 1 } }, { $out: 't' }], sales, env)).toStrictEqual([]);
    expect(env.docs('t')).toStrictEqual([
      { _id: 1, item: 'a' },
      { _id: 2, item: 'b' },
      { _id: 3, item: 'a' },
    ]);
    run(
      [{ $merge: { into: 't', whenMatched: 'merge' } }],
      [
        { _id: 1, x: 1 },
        { _id: 4, x: 4 },
      ],
      env,
    );
    expect(env.docs('t')[0]).toStrictEqual({ _id: 1, item: 'a', x: 1 });
    expect(env.docs('t')).toHaveLength(4);
    run(
      [
        {
          $merge: {
            into: 't',
            whenMatched: [{ $set: { y: '$$new.x' } }],
            whenNotMatched: 'discard',
          },
        },
      ],
      [{ _id: 2, x: 7 }, { _id: 99 }],
      env,
    );
    expect(env.docs('t')[1]).toStrictEqual({ _id: 2, item: 'b', y: 7 });
    expect(
      code(() => run([{ $merge: { into: 't', whenMatched: 'fail' } }], [{ _id: 1 }], env)),
    ).toBe(11000);
    expect(
      code(() => run([{ $merge: { into: 't', whenNotMatched: 'fail' } }], [{ _id: 50 }], env)),
    ).toBe(13113);
  });
  it('$collStats, $indexStats, $documents, $redact', () => {
    const env = new InMemoryPipelineEnv('test', 'c').seed('c', [{ _id: 1 }]);
    const [stats] = run([{ $collStats: { count: {}, storageStats: {} } }], [], env);
    expect(stats.ns).toBe('test.c');
    expect(stats.count).toBe(1);
    expect(run([{ $indexStats: {} }], [], env)[0].name).toBe('_id_');
    const dbEnv = new InMemoryPipelineEnv('test', null);
    expect(
      run([{ $documents: [{ a: 1 }, { a: 2 }] }, { $match: { a: 2 } }], [], dbEnv),
    ).toStrictEqual([{ a: 2 }]);
    const redacted = run(
      [{ $redact: { $cond: [{ $eq: ['$level', 'secret'] }, '$$PRUNE', '$$DESCEND'] } }],
      [{ _id: 1, sub: { level: 'secret' }, list: [{ level: 'open', v: 1 }, { level: 'secret' }] }],
    );
    expect(redacted).toStrictEqual([{ _id: 1, list: [{ level: 'open', v: 1 }] }]);
  });
  it('$sample returns at most size distinct documents', () => {
    const out = run([{ $sample: { size: 2 } }], sales);
    expect(out).toHaveLength(2);
    expect(new Set(out.map((d) => d._id)).size).toBe(2);
  });
});
