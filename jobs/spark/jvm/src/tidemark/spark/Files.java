package tidemark.spark;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.regex.Pattern;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.spark.SparkEnv;
import org.apache.spark.deploy.SparkHadoopUtil;

/**
 * tidemark's own file I/O in the JVM (the offsets log the gate reads, the side files it
 * writes), the JVM side of the Python storage layer (jobs/storage): a local path or
 * {@code file:} URI goes through java.nio with an atomic rename (no checksum files beside
 * it); any other URI ({@code hdfs://}, {@code s3a://}) through Hadoop's FileSystem with the
 * executor's Hadoop configuration (Spark's {@code spark.hadoop.*} included). A side file is
 * written whole with overwrite there: the driver reads it only after the task that writes it
 * has ended, so no reader sees it half written.
 */
final class Files {
    private static final Pattern SCHEME = Pattern.compile("^[A-Za-z][A-Za-z0-9+.-]*:");
    private static volatile Configuration conf;

    private Files() {}

    static boolean isLocal(String location) {
        return !SCHEME.matcher(location).find() || location.startsWith("file:");
    }

    static String localPath(String location) {
        if (!location.startsWith("file:")) return location;
        String rest = location.substring("file:".length());
        return rest.startsWith("//") ? "/" + rest.replaceFirst("^/+", "") : rest;
    }

    static Configuration hadoopConf() {
        Configuration c = conf;
        if (c == null) {
            SparkEnv env = SparkEnv.get();
            c = env == null ? new Configuration()
                            : SparkHadoopUtil.get().newConfiguration(env.conf());
            conf = c;
        }
        return c;
    }

    static String readText(String location) throws IOException {
        if (isLocal(location)) {
            return new String(java.nio.file.Files.readAllBytes(Paths.get(localPath(location))),
                              StandardCharsets.UTF_8);
        }
        org.apache.hadoop.fs.Path p = new org.apache.hadoop.fs.Path(location);
        FileSystem fs = p.getFileSystem(hadoopConf());
        try (InputStream in = fs.open(p)) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }

    static void writeText(String dir, String name, String text) throws IOException {
        byte[] data = text.getBytes(StandardCharsets.UTF_8);
        if (isLocal(dir)) {
            Path d = Paths.get(localPath(dir));
            java.nio.file.Files.createDirectories(d);
            Path tmp = d.resolve("." + name + ".tmp-jvm-" + Thread.currentThread().getId());
            java.nio.file.Files.write(tmp, data);
            java.nio.file.Files.move(tmp, d.resolve(name), StandardCopyOption.REPLACE_EXISTING,
                                     StandardCopyOption.ATOMIC_MOVE);
            return;
        }
        org.apache.hadoop.fs.Path p = new org.apache.hadoop.fs.Path(dir + "/" + name);
        FileSystem fs = p.getFileSystem(hadoopConf());
        try (OutputStream out = fs.create(p, true)) {
            out.write(data);
        }
    }
}
