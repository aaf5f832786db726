"""The part of the Hive Metastore's Thrift interface paimon-cli speaks, as Thrift IDL.

Only the structs and calls Paimon's HiveCatalog uses for what this tool does: databases,
tables and their locations, partitions, and the table lock. Field ids are the metastore's
own (they are the wire format and never change between Hive 2.x and 4.x); fields a server
sends that are not declared here are skipped by the protocol, so newer servers answer too.
Loaded by thriftpy2 at run time (``core.catalog.hive_client``): no generated code.
"""

IDL = """
enum LockLevel { DB = 1, TABLE = 2, PARTITION = 3 }
enum LockState { ACQUIRED = 1, WAITING = 2, ABORT = 3, NOT_ACQUIRED = 4 }
enum LockType { SHARED_READ = 1, SHARED_WRITE = 2, EXCLUSIVE = 3 }

struct FieldSchema {
  1: string name,
  2: string type,
  3: string comment
}

struct Database {
  1: string name,
  2: string description,
  3: string locationUri,
  4: map<string, string> parameters,
  6: optional string ownerName
}

struct SerDeInfo {
  1: string name,
  2: string serializationLib,
  3: map<string, string> parameters
}

struct StorageDescriptor {
  1: list<FieldSchema> cols,
  2: string location,
  3: string inputFormat,
  4: string outputFormat,
  5: bool compressed,
  6: i32 numBuckets,
  7: SerDeInfo serdeInfo,
  8: list<string> bucketCols,
  10: map<string, string> parameters
}

struct Table {
  1: string tableName,
  2: string dbName,
  3: string owner,
  4: i32 createTime,
  5: i32 lastAccessTime,
  6: i32 retention,
  7: StorageDescriptor sd,
  8: list<FieldSchema> partitionKeys,
  9: map<string, string> parameters,
  12: string tableType
}

struct Partition {
  1: list<string> values,
  2: string dbName,
  3: string tableName,
  4: i32 createTime,
  5: i32 lastAccessTime,
  6: StorageDescriptor sd,
  7: map<string, string> parameters
}

struct LockComponent {
  1: LockType type,
  2: LockLevel level,
  3: string dbname,
  4: optional string tablename,
  5: optional string partitionname
}

struct LockRequest {
  1: list<LockComponent> component,
  2: optional i64 txnid,
  3: string user,
  4: string hostname,
  5: optional string agentInfo
}

struct LockResponse {
  1: i64 lockid,
  2: LockState state
}

struct CheckLockRequest {
  1: i64 lockid
}

struct UnlockRequest {
  1: i64 lockid
}

struct ShowLocksRequest {
  1: optional string dbname,
  2: optional string tablename
}

struct ShowLocksResponseElement {
  1: i64 lockid,
  2: string dbname,
  3: optional string tablename,
  5: LockState state,
  6: LockType type,
  10: string user,
  11: string hostname
}

struct ShowLocksResponse {
  1: list<ShowLocksResponseElement> locks
}

exception MetaException { 1: string message }
exception NoSuchObjectException { 1: string message }
exception AlreadyExistsException { 1: string message }
exception InvalidObjectException { 1: string message }
exception NoSuchTxnException { 1: string message }
exception TxnAbortedException { 1: string message }
exception NoSuchLockException { 1: string message }
exception TxnOpenException { 1: string message }

service ThriftHiveMetastore {
  void create_database(1: Database database)
    throws (1: AlreadyExistsException o1, 2: InvalidObjectException o2, 3: MetaException o3)
  Database get_database(1: string name)
    throws (1: NoSuchObjectException o1, 2: MetaException o2)
  list<string> get_all_databases() throws (1: MetaException o1)
  list<string> get_all_tables(1: string db_name) throws (1: MetaException o1)
  Table get_table(1: string dbname, 2: string tbl_name)
    throws (1: MetaException o1, 2: NoSuchObjectException o2)
  void create_table(1: Table tbl)
    throws (1: AlreadyExistsException o1, 2: InvalidObjectException o2, 3: MetaException o3,
            4: NoSuchObjectException o4)
  void alter_table(1: string dbname, 2: string tbl_name, 3: Table new_tbl)
    throws (1: InvalidObjectException o1, 2: MetaException o2)
  Partition add_partition(1: Partition new_part)
    throws (1: InvalidObjectException o1, 2: AlreadyExistsException o2, 3: MetaException o3)
  bool drop_partition(1: string db_name, 2: string tbl_name, 3: list<string> part_vals,
                      4: bool deleteData)
    throws (1: NoSuchObjectException o1, 2: MetaException o2)
  list<Partition> get_partitions(1: string db_name, 2: string tbl_name, 3: i16 max_parts = -1)
    throws (1: NoSuchObjectException o1, 2: MetaException o2)
  LockResponse lock(1: LockRequest rqst)
    throws (1: NoSuchTxnException o1, 2: TxnAbortedException o2)
  LockResponse check_lock(1: CheckLockRequest rqst)
    throws (1: NoSuchTxnException o1, 2: TxnAbortedException o2, 3: NoSuchLockException o3)
  void unlock(1: UnlockRequest rqst)
    throws (1: NoSuchLockException o1, 2: TxnOpenException o2)
  ShowLocksResponse show_locks(1: ShowLocksRequest rqst)
}
"""
