import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.MiniDFSCluster;

/**
 * A real HDFS (one NameNode, one DataNode) in this JVM, for the tests: started on free ports on
 * 127.0.0.1, it writes "hdfs://host:port http://host:port" (RPC and WebHDFS addresses) to the
 * file named by args[1] once it serves, and stops when its standard input closes.
 * Usage: java -cp <minicluster jar>:<pyspark jars>/* MiniHdfs.java BASE_DIR READY_FILE
 * (jobs/storage/minihdfs.py does this).
 */
public final class MiniHdfs {
    public static void main(String[] args) throws Exception {
        Configuration conf = new Configuration();
        conf.set(MiniDFSCluster.HDFS_MINIDFS_BASEDIR, new File(args[0]).getAbsolutePath());
        conf.set("dfs.namenode.rpc-address", "127.0.0.1:0");
        conf.set("dfs.namenode.http-address", "127.0.0.1:0");
        conf.set("dfs.datanode.address", "127.0.0.1:0");
        conf.set("dfs.datanode.http.address", "127.0.0.1:0");
        conf.set("dfs.datanode.ipc.address", "127.0.0.1:0");
        conf.setBoolean("dfs.webhdfs.enabled", true);
        conf.setBoolean("dfs.permissions.enabled", false);
        conf.setInt("dfs.replication", 1);
        MiniDFSCluster cluster = new MiniDFSCluster.Builder(conf)
            .numDataNodes(1).format(true).build();
        cluster.waitActive();
        String rpc = "hdfs://127.0.0.1:" + cluster.getNameNodePort();
        String http = "http://127.0.0.1:" + cluster.getNameNode().getHttpAddress().getPort();
        String ready = args[1] + ".tmp";
        Files.write(Paths.get(ready), (rpc + " " + http + "\n").getBytes(StandardCharsets.UTF_8));
        Files.move(Paths.get(ready), Paths.get(args[1]));
        while (System.in.read() != -1) {
            // runs until the test closes our standard input (or ends)
        }
        cluster.shutdown(true);
    }
}
