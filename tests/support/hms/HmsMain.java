/*
 * Starts a Hive Metastore 2.3 (from the jars PySpark ships) for the tests: creates the
 * transaction tables in its embedded Derby first (TxnDbUtil.prepDb, what hive.in.test does,
 * without hive.in.test's check that rejects lock requests carrying no operation type, as
 * Paimon's HiveCatalogLock sends them), then runs the metastore's own main.
 */
public class HmsMain {
    public static void main(String[] args) throws Throwable {
        org.apache.hadoop.hive.metastore.txn.TxnDbUtil.prepDb(
                new org.apache.hadoop.hive.conf.HiveConf());
        org.apache.hadoop.hive.metastore.HiveMetaStore.main(args);
    }
}
