#include "trace/thread_buffer.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <bit>

namespace flotilla::trace {

ThreadBuffer::ThreadBuffer(uint32_t thread_index, size_t capacity)
    : thread_index_(thread_index),
      capacity_(std::bit_ceil(std::max<size_t>(capacity, 2))),
      mask_(capacity_ - 1),
      os_tid_(static_cast<int>(syscall(SYS_gettid))),
      events_(new Event[capacity_]) {}

void ThreadBuffer::set_name(std::string name) {
  std::lock_guard<std::mutex> lock(name_mu_);
  name_ = std::move(name);
}

std::string ThreadBuffer::name() const {
  std::lock_guard<std::mutex> lock(name_mu_);
  return name_;
}

BufferRegistry& BufferRegistry::Get() {
  static auto* registry = new BufferRegistry();  // threads may record during exit
  return *registry;
}

namespace {
// The thread's buffer (shared with the registry, which frees it once the
// thread is gone and it is drained) and the name its row gets.
thread_local std::shared_ptr<ThreadBuffer> t_buffer;
thread_local std::string t_name;
}  // namespace

ThreadBuffer& BufferRegistry::Local() {
  if (!t_buffer) {
    std::lock_guard<std::mutex> lock(mu_);
    t_buffer = std::make_shared<ThreadBuffer>(next_index_++, capacity_);
    t_buffer->set_name(t_name);
    buffers_.push_back(t_buffer);
  }
  return *t_buffer;
}

void BufferRegistry::SetLocalName(std::string name) {
  if (t_buffer) t_buffer->set_name(name);
  t_name = std::move(name);
}

void BufferRegistry::PruneDrained() {
  std::lock_guard<std::mutex> lock(mu_);
  std::erase_if(buffers_, [](const std::shared_ptr<ThreadBuffer>& b) {
    return b.use_count() == 1 && b->empty();
  });
}

std::vector<std::shared_ptr<ThreadBuffer>> BufferRegistry::All() const {
  std::lock_guard<std::mutex> lock(mu_);
  return buffers_;
}

void BufferRegistry::set_capacity(size_t events) {
  std::lock_guard<std::mutex> lock(mu_);
  capacity_ = events;
}

}  // namespace flotilla::trace
