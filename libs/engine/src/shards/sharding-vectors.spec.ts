import { describeShardingVectors } from '../../../../test/fixtures/sharding-vectors';
import { compareKeyValues } from './key-order';
import { hashShardKeyValue } from './shard-hash';

// The same vectors as the emulator's implementations (libs/mongo-emulator/test).
describeShardingVectors('engine', { hash64: hashShardKeyValue, compare: compareKeyValues });
