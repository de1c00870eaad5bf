// class-transformer's @Type reads design metadata, which needs the Reflect polyfill loaded.
import 'reflect-metadata';
import { Type } from 'class-transformer';
import { IsDefined, IsObject, IsString, ValidateNested } from 'class-validator';
import {
  IsCollectionName,
  IsDatabaseName,
  IsShardKey,
  IsSyncableDatabase,
} from '../validation/mongo-validators';

/** `shardCollection` of a sharding entry: the destination shard key, fields in order. */
export class ShardCollectionDto {
  @IsShardKey()
  @IsDefined({ message: 'is required' })
  key!: Array<Record<string, 1 | -1 | 'hashed'>>;
}

/**
 * One element of `sharding.shardingEntries`: a collection and its shard key.
 * Decorators run bottom-up: type checks first (see README).
 */
export class ShardingEntryDto {
  @IsSyncableDatabase()
  @IsDatabaseName()
  @IsString({ message: 'must be a string' })
  @IsDefined({ message: 'is required' })
  database!: string;

  @IsCollectionName()
  @IsString({ message: 'must be a string' })
  @IsDefined({ message: 'is required' })
  collection!: string;

  @ValidateNested()
  @Type(() => ShardCollectionDto)
  @IsObject({ message: 'must be an object like {"key": [{"field": 1}]}' })
  @IsDefined({ message: 'is required' })
  shardCollection!: ShardCollectionDto;
}
