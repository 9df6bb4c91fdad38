// Decodes a file's video with the named FFmpeg decoder (one decoder, the file fed `repeats` times); prints the frame count,
// the pixel format, a checksum of every frame's luma plane in the first pass (the same for the
// software and the NVDEC decoder where NVDEC is exact), and the wall and CPU seconds of all
// passes: frames per second, and the cores the decode keeps busy (CPU / wall).
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/pixdesc.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
static unsigned long long sum, frames, frames0;
static double w0, c0;
static int first = 1;
static void take(AVCodecContext* c, AVFrame* fr) {
  while (avcodec_receive_frame(c, fr) >= 0) {
    if (first)
      for (int y = 0; y < fr->height; ++y)
        for (int x = 0; x < fr->width; ++x) sum = sum * 31 + fr->data[0][y * fr->linesize[0] + x];
    ++frames;
    av_frame_unref(fr);
  }
}
static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}
static double cpu(void) {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_utime.tv_usec * 1e-6 + u.ru_stime.tv_sec + u.ru_stime.tv_usec * 1e-6;
}
static double open_s;
static int pass(const char* path, const char* name, int repeats) {
  AVFormatContext* f = NULL;
  if (avformat_open_input(&f, path, NULL, NULL) < 0) return 2;
  avformat_find_stream_info(f, NULL);
  int s = av_find_best_stream(f, AVMEDIA_TYPE_VIDEO, -1, -1, NULL, 0);
  const AVCodec* codec = avcodec_find_decoder_by_name(name);
  if (!codec) { printf("%s %s: not in this FFmpeg\n", path, name); return 3; }
  AVCodecContext* c = avcodec_alloc_context3(codec);
  avcodec_parameters_to_context(c, f->streams[s]->codecpar);
  c->thread_count = 1;
  double t0 = now();
  int rc = avcodec_open2(c, codec, NULL);
  if (rc < 0) { printf("%s %s: does not open (%s)\n", path, name, av_err2str(rc)); return 4; }
  open_s = now() - t0;
  AVPacket* p = av_packet_alloc();
  AVFrame* fr = av_frame_alloc();
  for (int r = 0; r < repeats; ++r) {
    if (r == 1) { w0 = now(); c0 = cpu(); frames0 = frames; }
    av_seek_frame(f, s, 0, AVSEEK_FLAG_BACKWARD);
    while (av_read_frame(f, p) >= 0) {
      if (p->stream_index == s) avcodec_send_packet(c, p);
      av_packet_unref(p);
      take(c, fr);
    }
    avcodec_send_packet(c, NULL);
    take(c, fr);
    avcodec_flush_buffers(c);
    if (first) printf("%s %s: %llu frames, %s, luma %016llx", path, name, frames,
                      av_get_pix_fmt_name(c->pix_fmt), sum);
    first = 0;
  }
  av_frame_free(&fr);
  av_packet_free(&p);
  avcodec_free_context(&c);
  avformat_close_input(&f);
  return 0;
}
// The first pass warms up; the others are timed.
int main(int argc, char** argv) {
  if (argc != 4) return 2;
  int repeats = atoi(argv[3]);
  int rc = pass(argv[1], argv[2], repeats);
  if (rc) return rc;
  double wall = now() - w0, used = cpu() - c0;
  printf(", open %.3f s, %d timed passes %.3f s wall %.3f s CPU: %.0f frames/s, %.2f cores\n",
         open_s, repeats - 1, wall, used, (frames - frames0) / wall, used / wall);
  return 0;
}
