import { describeShardingVectors } from '../../../test/fixtures/sharding-vectors';
import { compareValues } from '../src/bson/compare';
import { hashShardKeyValue } from '../src/sharding/hashing';

// The same vectors as the engine's implementations (libs/engine/src/shards).
describeShardingVectors('emulator', { hash64: hashShardKeyValue, compare: compareValues });
